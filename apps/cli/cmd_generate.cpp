// inferdesk-cli generate: one prompt (--prompt-ids) or many (--requests FILE.jsonl) through the
// engine's continuous batcher. Output format (--json) is relied on by external checks.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "apps/cli/cli_common.h"
#include "apps/cli/commands.h"
#include "apps/cli/text_prompt.h"
#include "core/util/error.h"
#include "core/util/json_guard.h"

#include <future>

namespace inferdesk::cli {

namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt_ids;
  std::string requests_file;
  TextPromptOptions text;
  bool show_prompt = false;
  BackendChoice backend;
  bool json = false;
  int32_t max_tokens = 128;
  float temperature = 1.0f, top_p = 1.0f, min_p = 0.0f;
  int32_t top_k = 0;
  float repetition_penalty = 1.0f, presence_penalty = 0.0f, frequency_penalty = 0.0f;
  uint64_t seed = 0;
  std::string stop_ids;
  int32_t logprobs = 0;
  bool ignore_eos = false;
  int64_t kv_cache_mb = 0;
  int32_t max_num_seqs = 256;
  int32_t max_batched_tokens = 2048;
  CLI::App* cmd = nullptr;
};

bool given(const CLI::App* cmd, const char* flag) { return cmd->count(flag) > 0; }

// Flags first; where a flag is absent, the model's generation_config.json default (as vLLM does).
SamplingParams params_from_flags(const GenerateArgs& a, const LoadedModel& m) {
  SamplingParams p;
  const GenerationConfig* g = m.folder ? &m.folder->generation_config() : nullptr;
  p.temperature = given(a.cmd, "--temperature") || !g || g->temperature < 0
                      ? a.temperature
                      : static_cast<float>(g->temperature);
  p.top_p = given(a.cmd, "--top-p") || !g || g->top_p < 0 ? a.top_p : static_cast<float>(g->top_p);
  p.top_k = given(a.cmd, "--top-k") || !g || g->top_k < 0 ? a.top_k : static_cast<int32_t>(g->top_k);
  p.repetition_penalty = given(a.cmd, "--repetition-penalty") || !g || g->repetition_penalty < 0
                             ? a.repetition_penalty
                             : static_cast<float>(g->repetition_penalty);
  p.min_p = a.min_p;
  p.presence_penalty = a.presence_penalty;
  p.frequency_penalty = a.frequency_penalty;
  if (given(a.cmd, "--seed")) p.seed = a.seed;
  p.max_tokens = a.max_tokens;
  if (!a.stop_ids.empty()) p.stop_token_ids = parse_id_list(a.stop_ids, "--stop-ids");
  p.logprobs = a.logprobs;
  p.ignore_eos = a.ignore_eos;
  return p;
}

template <typename T>
void read_field(const nlohmann::json& j, const char* key, T& out, size_t line) {
  if (!j.contains(key) || j[key].is_null()) return;
  try {
    out = j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(ErrorCode::InvalidArgument,
                "requests line " + std::to_string(line) + ": field '" + key + "' has the wrong type");
  }
}

Request request_from_json(const nlohmann::json& j, SamplingParams base, size_t line) {
  if (!j.is_object() || !j.contains("prompt_ids") || !j["prompt_ids"].is_array())
    throw Error(ErrorCode::InvalidArgument,
                "requests line " + std::to_string(line) + ": expected an object with prompt_ids");
  Request r;
  r.params = std::move(base);
  read_field(j, "prompt_ids", r.prompt_ids, line);
  read_field(j, "max_tokens", r.params.max_tokens, line);
  read_field(j, "temperature", r.params.temperature, line);
  read_field(j, "top_p", r.params.top_p, line);
  read_field(j, "top_k", r.params.top_k, line);
  read_field(j, "min_p", r.params.min_p, line);
  read_field(j, "repetition_penalty", r.params.repetition_penalty, line);
  read_field(j, "presence_penalty", r.params.presence_penalty, line);
  read_field(j, "frequency_penalty", r.params.frequency_penalty, line);
  read_field(j, "logprobs", r.params.logprobs, line);
  read_field(j, "ignore_eos", r.params.ignore_eos, line);
  read_field(j, "stop_token_ids", r.params.stop_token_ids, line);
  read_field(j, "stop_ids", r.params.stop_token_ids, line);
  if (j.contains("seed") && !j["seed"].is_null()) {
    uint64_t s = 0;
    read_field(j, "seed", s, line);
    r.params.seed = s;
  }
  return r;
}

std::vector<Request> read_requests(const std::string& path, const SamplingParams& base) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::NotFound, "cannot open requests file " + path);
  std::vector<Request> out;
  std::string text;
  size_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = parse_untrusted_json(text, path + " line " + std::to_string(line));
    out.push_back(request_from_json(j, base, line));
  }
  return out;
}

// Text in, text out: stream the reply to stdout as it is generated.
void stream_text(Engine& engine, Request request, const Tokenizer& tok) {
  IncrementalDecoder decoder(tok, /*skip_special_tokens=*/true);
  std::promise<StreamEvent> done;
  engine.submit(std::move(request), [&](const StreamEvent& ev) {
    for (const auto& t : ev.tokens) std::fputs(decoder.push(t.id).c_str(), stdout);
    std::fflush(stdout);
    if (ev.finished) done.set_value(ev);
  });
  const StreamEvent last = done.get_future().get();
  std::fputs(decoder.finish().c_str(), stdout);
  std::fprintf(stdout, "\n");
  std::fprintf(stderr, "[%s; time to first token %.3f s, %.1f s total]\n",
               finish_reason_name(last.reason), last.time_to_first_token_s, last.elapsed_s);
  if (last.reason == FinishReason::Error) {
    std::fprintf(stderr, "error: %s\n", last.error.c_str());
    exit_status() = 1;
  }
}

void run_generate(GenerateArgs& a) {
  const int sources = !a.prompt_ids.empty() + !a.requests_file.empty() + !a.text.prompt.empty();
  if (sources != 1)
    throw Error(ErrorCode::InvalidArgument, "give exactly one of --prompt-ids, --prompt or --requests");
  if (a.text.chat && a.text.prompt.empty())
    throw Error(ErrorCode::InvalidArgument, "--chat applies the chat template to --prompt");
  std::optional<Tokenizer> tok;
  std::vector<int32_t> text_ids;
  if (!a.text.prompt.empty()) {
    tok = load_tokenizer_for(a.model);
    EncodedPrompt enc = encode_prompt(*tok, a.model, a.text);
    if (a.show_prompt) std::fprintf(stderr, "%s\n", enc.rendered.c_str());
    if (!enc.warning.empty()) std::fprintf(stderr, "warning: %s\n", enc.warning.c_str());
    text_ids = std::move(enc.ids);
  }
  LoadedModel model = load_for_cli(a.model, "", a.backend, !a.json);
  const SamplingParams base = params_from_flags(a, model);
  std::vector<Request> requests;
  if (!a.prompt_ids.empty())
    requests.push_back({parse_id_list(a.prompt_ids, "--prompt-ids"), base});
  else if (tok)
    requests.push_back({text_ids, base});
  else
    requests = read_requests(a.requests_file, base);
  std::vector<int32_t> logprobs_wanted;
  for (const auto& r : requests) {
    r.params.validate();
    logprobs_wanted.push_back(r.params.logprobs);
  }
  EngineOptions opts = engine_options(a.backend, a.kv_cache_mb);
  opts.scheduler.max_num_seqs = a.max_num_seqs;
  opts.scheduler.max_num_batched_tokens = a.max_batched_tokens;
  Engine engine(std::move(model), opts);
  if (tok && !a.json) {
    stream_text(engine, std::move(requests[0]), *tok);
    return;
  }
  const std::vector<GenerationResult> results = generate_all(engine, std::move(requests));
  bool any_error = false;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    any_error |= r.reason == FinishReason::Error;
    if (a.json) {
      nlohmann::json j = result_to_json(r, logprobs_wanted[i]);
      if (tok) {
        const auto ids = r.token_ids();
        j["text"] = tok->decode(ids, /*skip_special_tokens=*/true);
        j["prompt_tokens"] = text_ids.size();
        j["prompt_ids"] = text_ids;
      }
      std::cout << j.dump() << "\n";
    } else {
      std::cout << "request " << i << ": " << finish_reason_name(r.reason);
      if (!r.error.empty()) std::cout << " (" << r.error << ")";
      std::cout << "\n  tokens:";
      for (int32_t t : r.token_ids()) std::cout << " " << t;
      std::cout << "\n";
    }
  }
  std::cout.flush();
  if (any_error) exit_status() = 1;
}

}  // namespace

void register_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* c = app.add_subcommand("generate", "Generate tokens with a model");
  a->cmd = c;
  c->add_option("--model", a->model, "Hugging Face model folder")->required();
  c->add_option("--prompt-ids", a->prompt_ids, "Prompt token ids, comma-separated");
  c->add_option("--requests", a->requests_file, "JSONL file: one request object per line");
  c->add_option("--prompt", a->text.prompt, "Prompt text (encoded with the model's tokenizer)");
  c->add_flag("--chat", a->text.chat, "Wrap --prompt in the model's chat template as a user turn");
  c->add_option("--system", a->text.system, "System message (with --chat)");
  c->add_option("--chat-template-kwargs", a->text.chat_template_kwargs,
                "JSON object of extra template variables, e.g. '{\"enable_thinking\": false}'");
  c->add_option("--chat-template-name", a->text.template_name, "A named template (e.g. tool_use)");
  c->add_flag("--show-prompt", a->show_prompt, "Print the rendered prompt to stderr");
  c->add_flag("--parse-special-tokens", a->text.parse_special_tokens,
              "Treat special-token strings typed in --prompt/--system as control tokens");
  add_backend_options(c, a->backend);
  c->add_flag("--json", a->json, "Print one JSON object per request");
  c->add_option("--max-tokens", a->max_tokens, "Tokens to generate at most");
  c->add_option("--temperature", a->temperature, "0 = greedy");
  c->add_option("--top-p", a->top_p);
  c->add_option("--top-k", a->top_k, "0 or -1 = off");
  c->add_option("--min-p", a->min_p);
  c->add_option("--repetition-penalty", a->repetition_penalty);
  c->add_option("--presence-penalty", a->presence_penalty);
  c->add_option("--frequency-penalty", a->frequency_penalty);
  c->add_option("--seed", a->seed, "Per-request sampling seed");
  c->add_option("--stop-ids", a->stop_ids, "Extra stop token ids, comma-separated");
  c->add_option("--logprobs", a->logprobs, "Top-k log-probabilities per token (0-20)");
  c->add_flag("--ignore-eos", a->ignore_eos, "Do not stop at the model's EOS tokens");
  c->add_option("--kv-cache-mb", a->kv_cache_mb,
                "KV-cache budget in MiB (0: 1024 on the CPU; on CUDA what the memory fraction leaves)")
      ->default_val(0);
  c->add_option("--max-num-seqs", a->max_num_seqs, "Running sequences at most");
  c->add_option("--max-batched-tokens", a->max_batched_tokens, "Tokens per step at most");
  c->callback([a] { run_generate(*a); });
}

}  // namespace inferdesk::cli
