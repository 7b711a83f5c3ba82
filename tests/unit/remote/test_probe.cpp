// core/remote: probing scripted servers that answer as each engine's own server does (the shapes
// of /v1/models, /version, /info, /api/version and the server header), and typed errors.
#include <gtest/gtest.h>

#include "core/remote/probe.h"
#include "tests/unit/remote/mock_http.h"

namespace inferdesk::remote {
namespace {

using test::MockHttpServer;
using test::MockRoute;

std::string models_body(const std::string& id, const std::string& owner, const std::string& extra = "") {
  return R"({"object":"list","data":[{"id":")" + id + R"(","object":"model","created":1700000000,"owned_by":")" +
         owner + "\"" + extra + "}]}";
}

Endpoint at(const MockHttpServer& s) { return Endpoint{"mock", s.url() + "/v1/", "", ApiKind::Chat, ""}; }

struct Flavour {
  const char* name;
  Engine engine;
  std::string version;
  std::function<void(MockHttpServer&)> script;
};

std::vector<Flavour> flavours() {
  return {
      {"vllm", Engine::Vllm, "0.6.3",
       [](MockHttpServer& s) {
         s.route("/v1/models", {200, {"server: uvicorn"},
                                models_body("meta-llama/Llama-3.1-8B", "vllm",
                                            R"(,"root":"meta-llama/Llama-3.1-8B","parent":null,"max_model_len":8192)")});
         s.route("/version", {200, {}, R"({"version":"0.6.3"})"});
         s.route("/health", {200, {}, ""});
       }},
      {"sglang", Engine::SgLang, "",
       [](MockHttpServer& s) { s.route("/v1/models", {200, {"server: uvicorn"}, models_body("qwen", "sglang")}); }},
      {"lmdeploy", Engine::LmDeploy, "",
       [](MockHttpServer& s) { s.route("/v1/models", {200, {"server: uvicorn"}, models_body("internlm2", "lmdeploy")}); }},
      {"trtllm", Engine::TensorRtLlm, "0.17.0",
       [](MockHttpServer& s) {
         s.route("/v1/models", {200, {}, models_body("llama", "tensorrt_llm")});
         s.route("/version", {200, {}, R"({"version":"0.17.0"})"});
       }},
      {"mlc", Engine::MlcLlm, "",
       [](MockHttpServer& s) { s.route("/v1/models", {200, {}, models_body("Llama-3-8B-q4f16_1-MLC", "MLC-LLM")}); }},
      {"llamacpp", Engine::LlamaCpp, "",
       [](MockHttpServer& s) {
         s.route("/v1/models", {200, {"Server: llama.cpp"},
                                models_body("model.gguf", "llamacpp", R"(,"meta":{"vocab_type":2,"n_ctx_train":4096})")});
         s.route("/health", {200, {}, R"({"status":"ok"})"});
       }},
      {"llamacpp-by-header", Engine::LlamaCpp, "",
       [](MockHttpServer& s) { s.route("/v1/models", {200, {"Server: llama.cpp"}, models_body("m", "someone")}); }},
      {"tgi", Engine::Tgi, "3.2.1",
       [](MockHttpServer& s) {
         s.route("/v1/models", {200, {"x-compute-type: gpu+optimized"}, models_body("mistralai/Ministral-8B", "mistralai/Ministral-8B")});
         s.route("/info", {200, {}, R"({"model_id":"mistralai/Ministral-8B","max_concurrent_requests":128,)"
                                    R"("router":"text-generation-router","version":"3.2.1","sha":"4d28897"})"});
       }},
      {"ollama", Engine::Ollama, "0.5.7",
       [](MockHttpServer& s) {
         s.route("/v1/models", {200, {}, models_body("llama3.2:latest", "library")});
         s.route("/api/version", {200, {}, R"({"version":"0.5.7"})"});
       }},
      {"inferdesk", Engine::InferDesk, "",
       [](MockHttpServer& s) { s.route("/v1/models", {200, {"Server: inferdesk"}, models_body("tiny-chat", "inferdesk")}); }},
  };
}

TEST(Probe, EachEngineFlavourIsDetectedWithAReason) {
  for (const Flavour& f : flavours()) {
    SCOPED_TRACE(f.name);
    MockHttpServer server;
    f.script(server);
    const ProbeResult r = probe_endpoint(at(server));
    EXPECT_EQ(r.detection.engine, f.engine) << r.detection.reason;
    EXPECT_EQ(r.detection.version, f.version);
    EXPECT_FALSE(r.detection.reason.empty());
    ASSERT_EQ(r.models.size(), 1u);
  }
}

TEST(Probe, AnUnknownServerIsStillUsableAndSaysWhy) {
  MockHttpServer server;
  server.route("/v1/models", {200, {}, models_body("gpt-x", "acme")});
  const ProbeResult r = probe_endpoint(at(server));
  EXPECT_EQ(r.detection.engine, Engine::Unknown);
  EXPECT_NE(r.detection.reason.find("acme"), std::string::npos);
  EXPECT_EQ(r.models, std::vector<std::string>{"gpt-x"});
  EXPECT_FALSE(r.healthy);
}

TEST(Probe, TheServerHeaderIsKeptForTheRecord) {
  MockHttpServer server;
  server.route("/v1/models", {200, {"server: uvicorn", "x-powered-by: Express"}, models_body("m", "vllm")});
  EXPECT_EQ(probe_endpoint(at(server)).server_header, "uvicorn; Express");
}

RemoteErrorCode code_of(const Endpoint& e) {
  try {
    probe_endpoint(e, 2);
  } catch (const RemoteError& err) {
    return err.code();
  }
  ADD_FAILURE() << "no error";
  return RemoteErrorCode::Cancelled;
}

TEST(Probe, FailuresAreTyped) {
  MockHttpServer server;
  server.route("/v1/models", {401, {}, R"({"error":{"message":"bad key"}})"});
  EXPECT_EQ(code_of(at(server)), RemoteErrorCode::Unauthorized);
  server.route("/v1/models", {200, {}, "<html>hello</html>"});
  EXPECT_EQ(code_of(at(server)), RemoteErrorCode::NotJson);
  server.route("/v1/models", {200, {}, R"({"models":[]})"});
  EXPECT_EQ(code_of(at(server)), RemoteErrorCode::NotJson);
  server.route("/v1/models", {500, {}, "oops"});
  EXPECT_EQ(code_of(at(server)), RemoteErrorCode::HttpStatus);
  EXPECT_EQ(code_of(Endpoint{"x", "localhost:1234"}), RemoteErrorCode::InvalidUrl);
  // A port nothing listens on (the mock's own, once it is gone).
  std::string dead;
  {
    MockHttpServer gone;
    dead = gone.url();
  }
  EXPECT_EQ(code_of(Endpoint{"x", dead}), RemoteErrorCode::Unreachable);
}

TEST(Probe, TheApiKeyIsSentButNeverInTheErrorText) {
  MockHttpServer server;
  server.route("/v1/models", {401, {}, "{}"});
  Endpoint e = at(server);
  e.api_key = "sk-secret-123";
  try {
    probe_endpoint(e, 2);
    FAIL() << "no error";
  } catch (const RemoteError& err) {
    EXPECT_EQ(std::string(err.what()).find("sk-secret"), std::string::npos);
  }
  EXPECT_EQ(server.last_authorization(), "Bearer sk-secret-123");
}

TEST(BaseUrl, TrailingSlashesAndV1AreDropped) {
  EXPECT_EQ(normalized_base_url("http://h:1/v1/"), "http://h:1");
  EXPECT_EQ(normalized_base_url("http://h:1/"), "http://h:1");
  EXPECT_EQ(normalized_base_url("http://h:1"), "http://h:1");
}

}  // namespace
}  // namespace inferdesk::remote
