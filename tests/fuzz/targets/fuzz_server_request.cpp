// The HTTP server's request handling without a socket: raw request bytes through Beast's parser
// with the server's header and body limits, the Authorization check, then the body through the
// parsers of the route it names (chat and completion requests, /tokenize, /detokenize), against a
// served model with a real tokenizer and chat template from the shared data (token-id prompts
// only when those are missing). Input: a raw HTTP/1.1 request, or a bare JSON body (first byte
// '{' or '['), which goes through every body parser. A 4xx ApiError is the expected end of a bad
// request; any other exception would reach the client as a 500 and is a finding.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include "core/server/generation_request.h"
#include "core/server/routes.h"
#include "core/server/server_context.h"
#include "core/util/json_guard.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace inferdesk;
using namespace inferdesk::server;
namespace http = boost::beast::http;

std::shared_ptr<Server::Context> g_ctx;

ServedModel make_model() {
  ServedModel m;
  m.names = {"fuzz-model", "alias"};
  m.max_model_len = 4096;
  m.vocab_size = 1000;
  const auto shared = fuzz::shared_dir();
  try {
    m.tokenizer = Tokenizer::from_dir(shared / "tokenizers" / "Qwen2.5-Instruct");
    m.vocab_size = m.tokenizer->max_token_id() + 1;
    const std::string source = fuzz::read_file(shared / "chat-templates" / "Qwen-Qwen2.5-7B-Instruct.jinja");
    m.templates.emplace("default", chat::ChatTemplate::parse(source, "Qwen2.5.jinja"));
    m.bos_token = std::nullopt;
    m.eos_token = "<|im_end|>";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_server_request: without tokenizer / template: %s\n", e.what());
    m.template_problem = e.what();
  }
  m.defaults.max_tokens = 64;
  return m;
}

void run_body(Endpoint endpoint, std::string_view body_text, bool tokenize_routes) {
  const Json body = [&] {
    try {
      return parse_untrusted_ordered_json(body_text, "request body", 64);
    } catch (const Error& e) {
      bad_request(e.what());
    }
  }();
  const RequestLimits& limits = g_ctx->options.limits;
  if (!tokenize_routes && endpoint == Endpoint::Chat) (void)parse_chat_request(body, g_ctx->model, limits);
  if (!tokenize_routes && endpoint == Endpoint::Completion) (void)parse_completion_request(body, g_ctx->model, limits);
  if (tokenize_routes) {
    try {
      (void)tokenize_response(*g_ctx, body);
    } catch (const ApiError& e) {
      if (e.status() >= 500) throw;
    }
    (void)detokenize_response(*g_ctx, body);
  }
}

// Any exception but a 4xx ApiError is reported and crashes the run.
template <typename F>
void expect_client_errors(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    if (e.status() < 500) return;
    std::fprintf(stderr, "ApiError %d: %s\n", e.status(), e.what());
    __builtin_trap();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception other than a 4xx ApiError: %s\n", e.what());
    __builtin_trap();
  }
}

void run_http(std::string_view raw) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(g_ctx->options.max_header_bytes);
  parser.body_limit(g_ctx->options.max_body_bytes);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(raw.data(), raw.size()), ec);
  if (ec || !parser.is_done()) return;  // the session answers 400 / 413 / 431 or waits for more
  const auto& req = parser.get();
  const std::string_view target(req.target().data(), req.target().size());
  const std::string path(target.substr(0, target.find('?')));
  const auto auth = req[http::field::authorization];
  if (path.rfind("/v1/", 0) == 0 && !authorized(*g_ctx, std::string_view(auth.data(), auth.size()))) return;
  const std::string& body = req.body();
  if (path == "/v1/chat/completions") run_body(Endpoint::Chat, body, false);
  if (path == "/v1/completions") run_body(Endpoint::Completion, body, false);
  if (path == "/tokenize" || path == "/detokenize") run_body(Endpoint::Chat, body, true);
  if (path == "/v1/models") (void)models_response(*g_ctx);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ServerOptions options;
  options.api_key = "sk-fuzz";
  g_ctx = std::make_shared<Server::Context>(make_model(), std::move(options));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (!input.empty() && (input[0] == '{' || input[0] == '[')) {
    expect_client_errors([&] { run_body(Endpoint::Chat, input, false); });
    expect_client_errors([&] { run_body(Endpoint::Completion, input, false); });
    expect_client_errors([&] { run_body(Endpoint::Chat, input, true); });
    return 0;
  }
  expect_client_errors([&] { run_http(input); });
  return 0;
}
