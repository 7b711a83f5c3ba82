// inferdesk-cli generate: one prompt (--prompt-ids, --prompt) or many (--requests FILE.jsonl)
// through the engine's continuous batcher. Output format (--json) is relied on by external checks.
// Everything the user typed (flags, the requests file, the prompt's tokens) is checked before the
// model loads, so a typo costs no load time.
#include <cstdio>
#include <future>
#include <iostream>

#include "apps/cli/cli_common.h"
#include "apps/cli/commands.h"
#include "apps/cli/reply_summary.h"
#include "apps/cli/requests_file.h"
#include "apps/cli/text_prompt.h"
#include "core/util/error.h"

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
  std::string seed_text;  // --seed, parsed by parse_non_negative
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
// `g` null: the flags alone (their defaults where absent), as checked before the model loads.
SamplingParams params_from_flags(const GenerateArgs& a, const GenerationConfig* g) {
  SamplingParams p;
  p.temperature = given(a.cmd, "--temperature") || !g || g->temperature < 0 ? a.temperature
                                                                            : static_cast<float>(g->temperature);
  p.top_p = given(a.cmd, "--top-p") || !g || g->top_p < 0 ? a.top_p : static_cast<float>(g->top_p);
  p.top_k = given(a.cmd, "--top-k") || !g || g->top_k < 0 ? a.top_k : static_cast<int32_t>(g->top_k);
  p.repetition_penalty = given(a.cmd, "--repetition-penalty") || !g || g->repetition_penalty < 0
                             ? a.repetition_penalty
                             : static_cast<float>(g->repetition_penalty);
  p.min_p = a.min_p;
  p.presence_penalty = a.presence_penalty;
  p.frequency_penalty = a.frequency_penalty;
  if (given(a.cmd, "--seed")) p.seed = parse_non_negative(a.seed_text, "--seed");
  p.max_tokens = a.max_tokens;
  if (!a.stop_ids.empty()) p.stop_token_ids = parse_id_list(a.stop_ids, "--stop-ids");
  p.logprobs = a.logprobs;
  p.ignore_eos = a.ignore_eos;
  return p;
}

// The sampling flags alone, before anything is read or loaded: a bad value is reported at once.
void check_sampling_flags(const GenerateArgs& a) {
  try {
    params_from_flags(a, nullptr).validate();
  } catch (const Error& e) {
    throw Error(e.code(), std::string("sampling flags: ") + e.what());
  }
}

// The run's prompts, tokenized before the model loads: one line for --prompt-ids / --prompt, the
// file's lines for --requests.
struct Prompts {
  std::vector<RequestLine> lines;
  std::optional<Tokenizer> tok;  // loaded when a prompt is text
};

Prompts prepare_prompts(const GenerateArgs& a) {
  Prompts p;
  if (!a.requests_file.empty()) {
    p.lines = read_request_lines(a.requests_file, a.model, a.text, p.tok);
    return p;
  }
  RequestLine one;
  if (!a.prompt_ids.empty()) {
    one.prompt_ids = parse_id_list(a.prompt_ids, "--prompt-ids");
  } else {
    p.tok = load_tokenizer_for(a.model);
    EncodedPrompt enc = encode_prompt(*p.tok, a.model, a.text);
    if (a.show_prompt) std::fprintf(stderr, "%s\n", enc.rendered.c_str());
    if (!enc.warning.empty()) std::fprintf(stderr, "warning: %s\n", enc.warning.c_str());
    one.prompt_ids = std::move(enc.ids);
    one.from_text = true;
  }
  p.lines.push_back(std::move(one));
  return p;
}

// Text in, text out: stream the reply to stdout as it is generated, end it with a newline, then
// the stats line on stderr (stdout stays exactly the reply and its newline).
void stream_text(Engine& engine, Request request, const Tokenizer& tok, const std::vector<int32_t>& eos) {
  IncrementalDecoder decoder(tok, /*skip_special_tokens=*/true);
  std::promise<StreamEvent> done;
  ReplyFacts facts;
  bool at_line_start = true;
  auto write = [&](const std::string& text) {
    if (text.empty()) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    at_line_start = text.back() == '\n';
  };
  const SamplingParams params = request.params;
  engine.submit(std::move(request), [&](const StreamEvent& ev) {
    for (const auto& t : ev.tokens) {
      write(decoder.push(t.id));
      facts.last_token = t.id;
      ++facts.tokens;
    }
    std::fflush(stdout);
    if (ev.finished) done.set_value(ev);
  });
  const StreamEvent last = done.get_future().get();
  write(decoder.finish());
  if (!at_line_start) write("\n");
  std::fflush(stdout);
  facts.time_to_first_token_s = last.time_to_first_token_s;
  facts.elapsed_s = last.elapsed_s;
  facts.reason = last.reason;
  facts.error = last.error;
  std::fprintf(stderr, "%s\n", reply_stats_line(facts, params, eos).c_str());
  if (last.reason == FinishReason::Error) exit_status() = 1;
}

void print_results(const GenerateArgs& a, const Prompts& prompts, const std::vector<Request>& requests,
                   const std::vector<GenerationResult>& results, const std::vector<int32_t>& eos) {
  for (size_t i = 0; i < results.size(); ++i) {
    const GenerationResult& r = results[i];
    const RequestLine& line = prompts.lines[i];
    const std::string text = line.from_text ? prompts.tok->decode(r.token_ids(), /*skip_special_tokens=*/true) : "";
    if (a.json) {
      nlohmann::json j = result_to_json(r, requests[i].params.logprobs);
      if (line.from_text) {
        j["text"] = text;
        j["prompt_tokens"] = line.prompt_ids.size();
        j["prompt_ids"] = line.prompt_ids;
      }
      std::cout << j.dump() << "\n";
      continue;
    }
    ReplyFacts f{static_cast<int64_t>(r.tokens.size()),
                 r.time_to_first_token_s,
                 r.elapsed_s,
                 r.reason,
                 r.tokens.empty() ? -1 : r.tokens.back().id,
                 r.error};
    std::cout << "request " << i << ": " << f.tokens
              << " tokens, stopped: " << stop_reason_words(f, requests[i].params, eos) << "\n  tokens:";
    for (int32_t t : r.token_ids()) std::cout << " " << t;
    std::cout << "\n";
    if (line.from_text) std::cout << "  text: " << nlohmann::json(text).dump() << "\n";
  }
  std::cout.flush();
}

void run_generate(GenerateArgs& a) {
  const int sources = !a.prompt_ids.empty() + !a.requests_file.empty() + !a.text.prompt.empty();
  if (sources != 1) throw Error(ErrorCode::InvalidArgument, "give exactly one of --prompt-ids, --prompt or --requests");
  if (a.text.chat && a.text.prompt.empty())
    throw Error(ErrorCode::InvalidArgument, "--chat applies the chat template to --prompt");
  if (!a.text.chat_template_kwargs.empty()) {
    if (!a.text.chat && a.requests_file.empty())
      throw Error(ErrorCode::InvalidArgument,
                  "--chat-template-kwargs applies with --chat (or to --requests lines with \"messages\")");
    (void)parse_template_kwargs(a.text.chat_template_kwargs);  // malformed: said before anything loads
  }
  check_sampling_flags(a);
  const Prompts prompts = prepare_prompts(a);
  // Each --requests line's own sampling fields, checked before loading too.
  for (const RequestLine& line : prompts.lines) make_request(line, params_from_flags(a, nullptr));
  LoadedModel model = load_for_cli(a.model, "", a.backend, !a.json);
  const SamplingParams base = params_from_flags(a, model.folder ? &model.folder->generation_config() : nullptr);
  std::vector<Request> requests;
  for (const RequestLine& line : prompts.lines) requests.push_back(make_request(line, base));
  const std::vector<int32_t> eos = model.eos_token_ids;
  EngineOptions opts = engine_options(a.backend, a.kv_cache_mb);
  opts.scheduler.max_num_seqs = a.max_num_seqs;
  opts.scheduler.max_num_batched_tokens = a.max_batched_tokens;
  if (prompts.tok) opts.sample_vocab = sample_vocab_for(*prompts.tok, model.config.vocab_size);
  Engine engine(std::move(model), opts);
  if (!a.text.prompt.empty() && !a.json) {
    stream_text(engine, std::move(requests[0]), *prompts.tok, eos);
    return;
  }
  const std::vector<GenerationResult> results = generate_all(engine, requests);
  print_results(a, prompts, requests, results, eos);
  // A failed request exits 1: its reason goes to stderr too, where a user looks for it.
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].reason != FinishReason::Error) continue;
    exit_status() = 1;
    const size_t line = prompts.lines[i].line;
    std::fprintf(stderr, "inferdesk-cli: %s: %s\n",
                 line > 0 ? ("requests line " + std::to_string(line)).c_str() : "request", results[i].error.c_str());
  }
}

}  // namespace

void register_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* c = app.add_subcommand("generate", "Generate tokens with a model");
  a->cmd = c;
  c->add_option("--model", a->model, "Hugging Face model folder")->required();
  c->add_option("--prompt-ids", a->prompt_ids, "Prompt token ids, comma-separated");
  c->add_option("--requests", a->requests_file,
                "JSONL file: one object per line with \"prompt\" (text), \"messages\" (chat) or "
                "\"prompt_ids\", and optional sampling fields");
  c->add_option("--prompt", a->text.prompt, "Prompt text (encoded with the model's tokenizer)");
  c->add_flag("--chat", a->text.chat, "Wrap --prompt in the model's chat template as a user turn");
  c->add_option("--system", a->text.system, "System message (with --chat)");
  c->add_option("--chat-template-kwargs", a->text.chat_template_kwargs,
                "JSON object of extra template variables, e.g. '{\"enable_thinking\": false}'");
  c->add_option("--chat-template-name", a->text.template_name, "A named template (e.g. tool_use)");
  c->add_flag("--show-prompt", a->show_prompt, "Print the rendered prompt to stderr");
  c->add_flag("--parse-special-tokens", a->text.parse_special_tokens,
              "Treat special-token strings in --prompt/--system (and in --requests text) as control "
              "tokens");
  add_backend_options(c, a->backend);
  c->add_flag("--json", a->json,
              "Print one JSON object per request (default for --prompt: the reply as text on stdout, "
              "a stats line on stderr)");
  c->add_option("--max-tokens", a->max_tokens, "Tokens to generate at most");
  c->add_option("--temperature", a->temperature, "0 = greedy");
  c->add_option("--top-p", a->top_p);
  c->add_option("--top-k", a->top_k, "0 or -1 = off");
  c->add_option("--min-p", a->min_p);
  c->add_option("--repetition-penalty", a->repetition_penalty);
  c->add_option("--presence-penalty", a->presence_penalty);
  c->add_option("--frequency-penalty", a->frequency_penalty);
  c->add_option("--seed", a->seed_text, "Per-request sampling seed (an integer >= 0)");
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
