// inferdesk-cli serve: the engine as a local OpenAI-compatible server (core/server). Binds to
// 127.0.0.1 unless --host says otherwise; SIGINT / SIGTERM stop accepting, let in-flight
// requests finish for --shutdown-grace seconds, cancel the rest and exit 0.
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <memory>

#include "apps/cli/cli_common.h"
#include "apps/cli/commands.h"
#include "core/server/server.h"
#include "core/util/error.h"

namespace inferdesk::cli {

namespace {

struct ServeArgs {
  std::string model, dummy;
  std::vector<std::string> served_names;
  BackendChoice backend;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string api_key;
  int32_t max_num_seqs = 256, max_num_batched_tokens = 2048, max_model_len = 0;
  int64_t kv_cache_mb = 0, max_waiting = 1024;
  bool no_prefix_caching = false, log_requests = false;
  int http_threads = 2, max_connections = 4096;
  double request_timeout_s = 30, shutdown_grace_s = 10;
  int64_t max_body_kb = 8192;
};

// Many streaming clients need many descriptors: take the hard limit, as vLLM does.
void raise_fd_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

void log_line(const server::RequestLogEntry& e) {
  std::fprintf(stderr, "%s \"%s %s\" %d%s prompt=%lld completion=%lld%s%s %.3fs\n", e.remote.c_str(), e.method.c_str(),
               e.path.c_str(), e.status, e.stream ? " stream" : "", static_cast<long long>(e.prompt_tokens),
               static_cast<long long>(e.completion_tokens),
               e.finish_reason.empty() ? "" : " finish=", e.finish_reason.c_str(), e.duration_s);
}

server::ServerOptions server_options(const ServeArgs& a) {
  if (a.port < 0 || a.port > 65535) throw Error(ErrorCode::InvalidArgument, "--port must be in [0, 65535]");
  if (a.max_waiting < 0 || a.request_timeout_s <= 0 || a.shutdown_grace_s < 0 || a.max_body_kb < 1)
    throw Error(ErrorCode::InvalidArgument, "--max-waiting-requests, --shutdown-grace must be >= 0; --request-timeout, "
                                            "--max-body-kb > 0");
  server::ServerOptions o;
  o.host = a.host;
  o.port = static_cast<uint16_t>(a.port);
  o.api_key = a.api_key;
  o.io_threads = a.http_threads;
  o.max_connections = a.max_connections;
  o.max_body_bytes = static_cast<size_t>(a.max_body_kb) << 10;
  o.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.request_timeout_s * 1000));
  o.max_admitted = a.max_num_seqs + a.max_waiting;
  o.limits.max_choices = static_cast<int32_t>(std::min<int64_t>(o.max_admitted, 1024));
  if (a.log_requests) o.on_request = log_line;
  return o;
}

void run_serve(const ServeArgs& a) {
  // Signals are taken by sigwait() below: block them before any thread starts, so that every
  // thread (engine, CPU pool, HTTP) inherits the mask and none of them is interrupted.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  raise_fd_limit();
  server::ServerOptions options = server_options(a);
  LoadedModel model = load_for_cli(a.model, a.dummy, a.backend, true);
  EngineOptions eo = engine_options(a.backend, a.kv_cache_mb);
  eo.scheduler.max_num_seqs = a.max_num_seqs;
  eo.scheduler.max_num_batched_tokens = a.max_num_batched_tokens;
  eo.max_model_len = a.max_model_len;
  eo.enable_prefix_caching = !a.no_prefix_caching;
  std::optional<Tokenizer> tok;
  if (!a.model.empty()) tok = server::load_tokenizer(a.model);
  if (tok) eo.sample_vocab = sample_vocab_for(*tok, model.config.vocab_size);
  auto engine = std::make_shared<Engine>(std::move(model), eo);
  std::vector<std::string> names = a.served_names;
  if (names.empty() && !a.model.empty()) names.push_back(a.model);  // vLLM: the --model value
  auto served = server::make_served_model(engine, a.model, names, std::move(tok));
  const std::string name = served.name();
  server::Server srv(std::move(served), std::move(options));
  srv.start();
  std::fprintf(stderr, "inferdesk-cli serve: model '%s' (%d KV blocks, context %d), listening on %s\n", name.c_str(),
               engine->num_kv_blocks(), engine->max_model_len(), srv.url().c_str());
  std::fflush(stderr);
  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "inferdesk-cli serve: %s: shutting down (grace %.1f s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
               a.shutdown_grace_s);
  srv.shutdown(std::chrono::milliseconds(static_cast<int64_t>(a.shutdown_grace_s * 1000)));
  engine.reset();
  std::fprintf(stderr, "inferdesk-cli serve: stopped\n");
}

}  // namespace

void register_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* c = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  c->add_option("--model", a->model, "Hugging Face model folder");
  c->add_option("--dummy", a->dummy, "Built-in shape with random weights (token-id prompts only)");
  add_backend_options(c, a->backend);
  c->add_option("--host", a->host, "Address to bind (default 127.0.0.1: this machine only)");
  c->add_option("--port", a->port, "TCP port (0: any free port, printed at start)");
  c->add_option("--api-key", a->api_key, "Require 'Authorization: Bearer KEY' on /v1/*");
  c->add_option("--served-model-name", a->served_names,
                "Name(s) clients use for the model (default: the --model value)");
  c->add_option("--max-num-seqs", a->max_num_seqs, "Running sequences at most")->default_val(256);
  c->add_option("--max-num-batched-tokens", a->max_num_batched_tokens, "Tokens per step at most")->default_val(2048);
  c->add_option("--max-model-len", a->max_model_len, "Context length (0: the model's)");
  c->add_option("--kv-cache-mb", a->kv_cache_mb, "KV-cache budget in MiB (0: automatic)");
  c->add_flag("--no-enable-prefix-caching", a->no_prefix_caching, "Turn prefix caching off");
  c->add_option("--max-waiting-requests", a->max_waiting,
                "Requests admitted beyond --max-num-seqs; more get 429 with Retry-After")
      ->default_val(1024);
  c->add_option("--http-threads", a->http_threads, "Threads serving HTTP")->default_val(2);
  c->add_option("--max-connections", a->max_connections, "Open connections at most")->default_val(4096);
  c->add_option("--max-body-kb", a->max_body_kb, "Largest request body in KiB (413 beyond)")->default_val(8192);
  c->add_option("--request-timeout", a->request_timeout_s,
                "Seconds to receive one request (slow or idle clients are closed)")
      ->default_val(30);
  c->add_option("--shutdown-grace", a->shutdown_grace_s, "Seconds in-flight requests may finish after SIGINT/SIGTERM")
      ->default_val(10);
  c->add_flag("--log-requests", a->log_requests, "One line per request on stderr");
  c->callback([a] { run_serve(*a); });
}

}  // namespace inferdesk::cli
