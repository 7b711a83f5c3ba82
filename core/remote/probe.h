// probe_endpoint(): what is behind a base URL. GET /v1/models (required: it lists the models and
// usually names the engine in "owned_by"), then best-effort GETs that only some engines answer
// (/version, /health, TGI's /info, Ollama's /api/version) and the response headers ("server:",
// "x-powered-by"). detect_engine() is the pure rule over that evidence, with a reason in words.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/remote/endpoint.h"

namespace inferdesk::remote {

enum class Engine { Unknown, Vllm, Tgi, LmDeploy, TensorRtLlm, MlcLlm, SgLang, LlamaCpp, Ollama, InferDesk };

const char* display_name(Engine e);  // "vLLM", "TGI", ..., "OpenAI-compatible (unknown engine)"

// What the probe saw. Optional parts are absent when that request failed or was not JSON.
struct ProbeEvidence {
  nlohmann::json models;                       // the /v1/models body
  std::map<std::string, std::string> headers;  // of /v1/models, lower-cased names
  std::optional<nlohmann::json> version;       // GET /version
  std::optional<nlohmann::json> tgi_info;      // GET /info
  std::optional<nlohmann::json> ollama_version;  // GET /api/version
  std::optional<int> health_status;            // GET /health
};

struct Detection {
  Engine engine = Engine::Unknown;
  std::string version;  // "" when the server does not say
  std::string reason;   // why we think so ("/v1/models says owned_by \"vllm\"")
};

Detection detect_engine(const ProbeEvidence& evidence);

// The model ids of a /v1/models body; RemoteError(NotJson) when it is not {"data":[{"id":..}]}.
std::vector<std::string> model_ids(const nlohmann::json& models);

struct ProbeResult {
  std::vector<std::string> models;
  Detection detection;
  std::string server_header;  // "server:" (and "x-powered-by:") as sent, for the record
  bool healthy = false;       // /health answered 2xx
};

// Throws RemoteError: InvalidUrl, Unreachable, Unauthorized (401/403), HttpStatus, NotJson.
ProbeResult probe_endpoint(const Endpoint& endpoint, double timeout_s = 5);

}  // namespace inferdesk::remote
