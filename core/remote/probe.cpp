#include "core/remote/probe.h"

#include <algorithm>
#include <cctype>

#include "core/remote/http_client.h"

namespace inferdesk::remote {
namespace {

using Json = nlohmann::json;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The "owned_by" every listed model shares ("" when absent or mixed).
std::string owned_by(const Json& models) {
  std::string found;
  if (!models.is_object() || !models.contains("data") || !models["data"].is_array()) return found;
  for (const auto& m : models["data"]) {
    if (!m.is_object() || !m.contains("owned_by") || !m["owned_by"].is_string()) continue;
    const std::string o = m["owned_by"].get<std::string>();
    if (!found.empty() && found != o) return "";
    found = o;
  }
  return found;
}

std::string string_field(const std::optional<Json>& j, const char* key) {
  if (!j || !j->is_object() || !j->contains(key) || !(*j)[key].is_string()) return "";
  return (*j)[key].get<std::string>();
}

struct OwnerRule {
  const char* owned_by;  // lower-cased
  Engine engine;
};

// Each engine's default "owned_by" in its /v1/models model card.
constexpr OwnerRule kOwners[] = {
    {"vllm", Engine::Vllm},          {"sglang", Engine::SgLang},   {"lmdeploy", Engine::LmDeploy},
    {"tensorrt_llm", Engine::TensorRtLlm}, {"mlc-llm", Engine::MlcLlm}, {"llamacpp", Engine::LlamaCpp},
    {"inferdesk", Engine::InferDesk},
};

std::string header(const ProbeEvidence& e, const char* name) {
  const auto it = e.headers.find(name);
  return it == e.headers.end() ? "" : it->second;
}

}  // namespace

const char* display_name(Engine e) {
  switch (e) {
    case Engine::Vllm: return "vLLM";
    case Engine::Tgi: return "TGI";
    case Engine::LmDeploy: return "LMDeploy";
    case Engine::TensorRtLlm: return "TensorRT-LLM";
    case Engine::MlcLlm: return "MLC-LLM";
    case Engine::SgLang: return "SGLang";
    case Engine::LlamaCpp: return "llama.cpp";
    case Engine::Ollama: return "Ollama";
    case Engine::InferDesk: return "InferDesk";
    case Engine::Unknown: break;
  }
  return "OpenAI-compatible (unknown engine)";
}

Detection detect_engine(const ProbeEvidence& e) {
  Detection d;
  const std::string generic_version = string_field(e.version, "version");
  // TGI's /info is unmistakable (its router names itself), and TGI's model cards carry the
  // model id as owner, so it goes first.
  if (e.tgi_info && string_field(e.tgi_info, "router") == "text-generation-router") {
    d.engine = Engine::Tgi;
    d.version = string_field(e.tgi_info, "version");
    d.reason = "/info names router \"text-generation-router\"";
    return d;
  }
  const std::string owner = owned_by(e.models);
  for (const auto& rule : kOwners) {
    if (lower(owner) != rule.owned_by) continue;
    d.engine = rule.engine;
    d.version = generic_version;
    d.reason = "/v1/models says owned_by \"" + owner + "\"";
    return d;
  }
  const std::string server = lower(header(e, "server"));
  if (server.find("llama.cpp") != std::string::npos) {
    d.engine = Engine::LlamaCpp;
    d.reason = "the server header is \"" + header(e, "server") + "\"";
    return d;
  }
  if (server.find("inferdesk") != std::string::npos) {
    d.engine = Engine::InferDesk;
    d.version = generic_version;
    d.reason = "the server header is \"" + header(e, "server") + "\"";
    return d;
  }
  // Ollama: its native /api/version answers beside the OpenAI routes; its cards say "library"
  // (or the user's namespace), so the version route decides.
  if (const std::string v = string_field(e.ollama_version, "version"); !v.empty()) {
    d.engine = Engine::Ollama;
    d.version = v;
    d.reason = "/api/version answers as Ollama's does";
    return d;
  }
  d.version = generic_version;
  d.reason = owner.empty() ? "no engine-specific answer (no owned_by, server header or version route)"
                           : "owned_by \"" + owner + "\" names no engine we know";
  return d;
}

std::vector<std::string> model_ids(const Json& models) {
  if (!models.is_object() || !models.contains("data") || !models["data"].is_array())
    throw RemoteError(RemoteErrorCode::NotJson, "/v1/models did not return a model list ({\"data\": [...]})");
  std::vector<std::string> ids;
  for (const auto& m : models["data"])
    if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
  return ids;
}

namespace {

std::optional<Json> json_of(const HttpResult& r) {
  if (r.status < 200 || r.status >= 300) return std::nullopt;
  Json j = Json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// A best-effort GET: nothing when it fails in any way.
std::optional<HttpResult> try_get(const std::string& url, const Endpoint& ep, double timeout_s) {
  try {
    HttpCall c;
    c.url = url;
    c.bearer = ep.api_key;
    c.timeout_s = timeout_s;
    c.max_body = 1u << 20;
    return http_call(c);
  } catch (const RemoteError&) {
    return std::nullopt;
  }
}

void require_ok(const HttpResult& r, const std::string& what) {
  if (r.status == 401 || r.status == 403)
    throw RemoteError(RemoteErrorCode::Unauthorized,
                      what + " refused the request (HTTP " + std::to_string(r.status) +
                          "): check the endpoint's API key",
                      static_cast<int>(r.status));
  if (r.status < 200 || r.status >= 300)
    throw RemoteError(RemoteErrorCode::HttpStatus, what + " answered HTTP " + std::to_string(r.status),
                      static_cast<int>(r.status));
}

}  // namespace

ProbeResult probe_endpoint(const Endpoint& endpoint, double timeout_s) {
  const std::string base = normalized_base_url(endpoint.base_url);
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0)
    throw RemoteError(RemoteErrorCode::InvalidUrl,
                      "\"" + endpoint.base_url + "\" is not a URL: write it as http://host:port");
  HttpCall c;
  c.url = base + "/v1/models";
  c.bearer = endpoint.api_key;
  c.timeout_s = timeout_s;
  const HttpResult models = http_call(c);  // Unreachable propagates
  require_ok(models, base + "/v1/models");
  ProbeEvidence ev;
  ev.headers = models.headers;
  ev.models = Json::parse(models.body, nullptr, false);
  if (ev.models.is_discarded())
    throw RemoteError(RemoteErrorCode::NotJson,
                      base + "/v1/models did not answer with JSON: is this an OpenAI-compatible server?");
  ProbeResult out;
  out.models = model_ids(ev.models);
  if (auto r = try_get(base + "/version", endpoint, timeout_s)) ev.version = json_of(*r);
  if (auto r = try_get(base + "/health", endpoint, timeout_s)) ev.health_status = static_cast<int>(r->status);
  if (auto r = try_get(base + "/info", endpoint, timeout_s)) ev.tgi_info = json_of(*r);
  if (auto r = try_get(base + "/api/version", endpoint, timeout_s)) ev.ollama_version = json_of(*r);
  out.detection = detect_engine(ev);
  out.healthy = ev.health_status && *ev.health_status >= 200 && *ev.health_status < 300;
  const auto server = ev.headers.find("server");
  const auto powered = ev.headers.find("x-powered-by");
  if (server != ev.headers.end()) out.server_header = server->second;
  if (powered != ev.headers.end())
    out.server_header += (out.server_header.empty() ? "" : "; ") + powered->second;
  return out;
}

}  // namespace inferdesk::remote
