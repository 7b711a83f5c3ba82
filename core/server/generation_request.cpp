#include "core/server/generation_request.h"

#include <cfloat>
#include <limits>

#include "core/server/json_fields.h"
#include "core/util/error.h"

namespace inferdesk::server {

namespace {

constexpr size_t kMaxTemplateBytes = size_t{1} << 20;  // a request's own chat_template

// Fields vLLM has that change the output and that this server does not implement: refusing
// them is better than silently ignoring what the client asked for.
void refuse_unsupported(const JsonFields& f) {
  auto nonempty = [&](const char* key) {
    const Json* v = f.raw(key);
    return v && !(v->is_array() && v->empty()) && !(v->is_object() && v->empty()) &&
           !(v->is_string() && v->get_ref<const std::string&>().empty());
  };
  for (const char* key : {"logit_bias", "bad_words", "allowed_token_ids", "guided_json", "guided_regex",
                          "guided_choice", "guided_grammar", "structured_outputs", "suffix"})
    if (nonempty(key)) bad_request(std::string(key) + " is not supported by this server", key);
  if (f.boolean("use_beam_search").value_or(false))
    bad_request("beam search is not supported by this server", "use_beam_search");
  if (f.integer("min_tokens", 0, INT32_MAX).value_or(0) > 0)
    bad_request("min_tokens is not supported by this server", "min_tokens");
  if (f.integer("prompt_logprobs", 0, INT32_MAX).value_or(0) > 0)
    bad_request("prompt_logprobs is not supported by this server", "prompt_logprobs");
  if (const Json* rf = f.object("response_format")) {
    const auto type = rf->find("type");
    if (type == rf->end() || !type->is_string() || type->get_ref<const std::string&>() != "text")
      bad_request("response_format other than {\"type\": \"text\"} is not supported", "response_format");
  }
}

void parse_sampling(const JsonFields& f, const ServedModel& m, const RequestLimits& limits, GenerationRequest& r) {
  SamplingParams& p = r.params;
  const GenerationDefaults& d = m.defaults;
  p.temperature = static_cast<float>(f.number("temperature", 0, FLT_MAX).value_or(d.temperature.value_or(1.0f)));
  p.top_p = static_cast<float>(f.number("top_p", 0, 1).value_or(d.top_p.value_or(1.0f)));
  if (!(p.top_p > 0)) bad_request("top_p must be in (0, 1], got 0", "top_p");
  p.top_k = static_cast<int32_t>(f.integer("top_k", -1, INT32_MAX).value_or(d.top_k.value_or(0)));
  p.min_p = static_cast<float>(f.number("min_p", 0, 1).value_or(d.min_p.value_or(0.0f)));
  p.presence_penalty = static_cast<float>(f.number("presence_penalty", -2, 2).value_or(0));
  p.frequency_penalty = static_cast<float>(f.number("frequency_penalty", -2, 2).value_or(0));
  p.repetition_penalty = static_cast<float>(
      f.number("repetition_penalty", 0, FLT_MAX).value_or(d.repetition_penalty.value_or(1.0f)));
  if (!(p.repetition_penalty > 0)) bad_request("repetition_penalty must be > 0", "repetition_penalty");
  p.seed = f.seed("seed");
  p.ignore_eos = f.boolean("ignore_eos").value_or(false);
  p.stop_token_ids = f.int_list("stop_token_ids", limits.max_stop_strings, 0, INT32_MAX)
                         .value_or(std::vector<int32_t>{});
  r.stop = f.strings("stop", limits.max_stop_strings, limits.max_stop_bytes).value_or(std::vector<std::string>{});
  r.n = static_cast<int32_t>(f.integer("n", 1, limits.max_choices).value_or(1));
  r.include_stop_str = f.boolean("include_stop_str_in_output").value_or(false);
  r.skip_special_tokens = f.boolean("skip_special_tokens").value_or(true);
  r.return_token_ids = f.boolean("return_token_ids").value_or(false);
  r.stream = f.boolean("stream").value_or(false);
  if (const Json* so = f.object("stream_options")) {
    if (!r.stream) bad_request("stream_options can only be given when stream is true", "stream_options");
    const JsonFields opts(*so);
    r.include_usage = opts.boolean("include_usage").value_or(false);
    r.continuous_usage = opts.boolean("continuous_usage_stats").value_or(false);
  }
  refuse_unsupported(f);
}

// The max_tokens of one prompt: the request's, else the model's default, else the rest of the
// context; a request that cannot fit is refused as vLLM refuses it.
int32_t resolve_max_tokens(std::optional<int64_t> requested, const std::string& param, const ServedModel& m,
                           size_t prompt_len, const char* prompt_param) {
  const int64_t ctx = m.max_model_len;
  const int64_t len = static_cast<int64_t>(prompt_len);
  if (len >= ctx)
    bad_request("This model's maximum context length is " + std::to_string(ctx) +
                    " tokens. However, your request has " + std::to_string(len) +
                    " input tokens. Please reduce the length of the input.",
                prompt_param);
  if (requested) {
    if (*requested + len > ctx)
      bad_request("'" + param + "' is too large: " + std::to_string(*requested) +
                      ". This model's maximum context length is " + std::to_string(ctx) +
                      " tokens and your request has " + std::to_string(len) + " input tokens (" +
                      std::to_string(*requested) + " > " + std::to_string(ctx) + " - " + std::to_string(len) + ").",
                  param);
    return static_cast<int32_t>(*requested);
  }
  int64_t out = ctx - len;
  if (m.defaults.max_tokens) out = std::min<int64_t>(out, *m.defaults.max_tokens);
  return static_cast<int32_t>(out);
}

void check_ids(const std::vector<int32_t>& ids, const ServedModel& m, const char* param) {
  if (ids.empty()) bad_request("the prompt is empty", param);
  for (int32_t id : ids)
    if (id < 0 || id >= m.vocab_size)
      bad_request("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                      std::to_string(m.vocab_size - 1) + ")",
                  param);
}

const Tokenizer& need_tokenizer(const ServedModel& m, const char* what) {
  if (!m.tokenizer)
    bad_request(std::string("this model has no tokenizer, so ") + what +
                " cannot be used; send prompts as token ids to /v1/completions");
  return *m.tokenizer;
}

// Text parts of an OpenAI content list joined with newlines, as vLLM does; other parts refused.
Json message_content(const Json& content) {
  if (content.is_string() || content.is_null()) return content;
  if (!content.is_array()) bad_request("message content must be a string or a list of parts", "messages");
  std::string text;
  bool first = true;
  for (const Json& part : content) {
    const auto type = part.is_object() ? part.find("type") : part.end();
    const auto t = part.is_object() ? part.find("text") : part.end();
    if (type == part.end() || !type->is_string() || *type != "text" || t == part.end() || !t->is_string())
      bad_request("only text content parts ({\"type\": \"text\", \"text\": ...}) are supported", "messages");
    if (!first) text += "\n";
    text += t->get_ref<const std::string&>();
    first = false;
  }
  return text;
}

Json chat_messages(const Json* messages) {
  if (!messages || !messages->is_array() || messages->empty())
    bad_request("messages must be a non-empty list of messages", "messages");
  Json out = Json::array();
  for (const Json& m : *messages) {
    if (!m.is_object()) bad_request("each message must be an object", "messages");
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string()) bad_request("each message needs a string role", "messages");
    Json om = Json::object();
    for (auto it = m.begin(); it != m.end(); ++it)
      om[it.key()] = it.key() == "content" ? message_content(it.value()) : it.value();
    if (!om.contains("content")) om["content"] = nullptr;
    out.push_back(std::move(om));
  }
  return out;
}

std::string render_chat(const JsonFields& f, const ServedModel& m, const Json& messages) {
  const Json* tools = f.raw("tools");
  if (tools && !tools->is_array()) bad_request("tools must be a list", "tools");
  if (const Json* choice = f.raw("tool_choice"))
    if (!(choice->is_string() && *choice == "none"))
      bad_request("tool calling is not supported by this server (tool_choice must be \"none\")", "tool_choice");
  const bool add_generation = f.boolean("add_generation_prompt").value_or(true);
  const bool continue_final = f.boolean("continue_final_message").value_or(false);
  if (add_generation && continue_final && f.raw("add_generation_prompt"))
    bad_request("continue_final_message and add_generation_prompt cannot both be true", "continue_final_message");
  Json kwargs = Json::object();
  if (const Json* k = f.object("chat_template_kwargs")) kwargs = *k;
  const bool has_tools = tools && !tools->empty();
  std::optional<chat::ChatTemplate> own;
  const chat::ChatTemplate* tpl = nullptr;
  if (auto source = f.string("chat_template", kMaxTemplateBytes)) {
    try {
      own = chat::ChatTemplate::parse(*source, "request chat_template");
    } catch (const Error& e) {
      bad_request(e.what(), "chat_template");
    }
    tpl = &*own;
  } else {
    tpl = m.chat_template(has_tools);
    if (!tpl)
      bad_request("this model has no usable chat template (" + m.template_problem +
                  "); use /v1/completions or pass chat_template");
  }
  std::string rendered;
  try {
    rendered = chat::apply_chat_template(*tpl, messages, has_tools ? *tools : Json(), add_generation && !continue_final,
                                         m.bos_token, m.eos_token, kwargs);
  } catch (const Error& e) {
    bad_request(std::string("the chat template failed: ") + e.what(), "messages");
  }
  if (continue_final) {
    // The prompt ends right after the final message's text, so the model continues it.
    const Json& last = messages.back()["content"];
    const std::string text = last.is_string() ? last.get<std::string>() : std::string();
    const size_t at = text.empty() ? std::string::npos : rendered.rfind(text);
    if (at == std::string::npos)
      bad_request("continue_final_message: the final message's text is not in the rendered prompt",
                  "continue_final_message");
    rendered.resize(at + text.size());
  }
  return rendered;
}

void parse_logprobs_chat(const JsonFields& f, GenerationRequest& r) {
  r.logprobs = f.boolean("logprobs").value_or(false);
  r.top_logprobs = static_cast<int32_t>(f.integer("top_logprobs", 0, SamplingParams::kMaxLogprobs).value_or(0));
  if (r.top_logprobs > 0 && !r.logprobs) bad_request("top_logprobs needs logprobs set to true", "top_logprobs");
}

// prompt: "text" | ["text", ...] | [id, ...] | [[id, ...], ...]
std::vector<PromptInput> completion_prompts(const JsonFields& f, const ServedModel& m, const RequestLimits& limits) {
  const Json* p = f.raw("prompt");
  if (!p) bad_request("prompt is required", "prompt");
  const bool add_special = f.boolean("add_special_tokens").value_or(true);
  std::vector<PromptInput> out;
  auto from_text = [&](const Json& s) {
    const Tokenizer& tok = need_tokenizer(m, "text prompts");
    PromptInput in;
    in.text = s.get<std::string>();
    in.ids = tok.encode(in.text, EncodeOptions{add_special, false});
    out.push_back(std::move(in));
  };
  auto from_ids = [&](const Json& arr) {
    PromptInput in;
    in.ids.reserve(arr.size());
    for (const Json& e : arr) {
      const auto id = json_integer(e, 0, INT32_MAX);
      if (!id) bad_request("prompt token ids must be integers >= 0", "prompt");
      in.ids.push_back(static_cast<int32_t>(*id));
    }
    out.push_back(std::move(in));
  };
  if (p->is_string()) {
    from_text(*p);
  } else if (p->is_array() && !p->empty()) {
    if (p->size() > limits.max_prompt_items && !(*p)[0].is_number())
      bad_request("prompt has more than " + std::to_string(limits.max_prompt_items) + " entries", "prompt");
    if ((*p)[0].is_number()) {
      from_ids(*p);
    } else {
      for (const Json& e : *p) {
        if (e.is_string())
          from_text(e);
        else if (e.is_array())
          from_ids(e);
        else
          bad_request("prompt must be a string, a list of strings, a list of token ids or a list of those lists",
                      "prompt");
      }
    }
  } else {
    bad_request("prompt must be a string, a list of strings, a list of token ids or a list of those lists", "prompt");
  }
  return out;
}

void finish_prompts(GenerationRequest& r, const ServedModel& m, std::optional<int64_t> max_tokens,
                    const std::string& max_param, const RequestLimits& limits, const char* param) {
  if (r.num_choices() > limits.max_choices)
    bad_request("the request asks for " + std::to_string(r.num_choices()) +
                    " choices (prompts x n); this server allows " + std::to_string(limits.max_choices),
                "n");
  for (PromptInput& in : r.prompts) {
    check_ids(in.ids, m, param);
    in.max_tokens = resolve_max_tokens(max_tokens, max_param, m, in.ids.size(), param);
    if (in.text.empty() && r.echo && m.tokenizer) in.text = m.tokenizer->decode(in.ids, false);
  }
  r.params.max_tokens = r.prompts.front().max_tokens;
  r.params.logprobs = r.top_logprobs;
  try {
    r.params.validate();  // the engine's own check, as a backstop for the ranges above
  } catch (const Error& e) {
    bad_request(e.what());
  }
}

}  // namespace

void check_model_name(const Json& body, const ServedModel& model) {
  const JsonFields f(body);
  const auto name = f.string("model", 4096);
  if (name && !model.accepts(*name)) throw ApiError(404, "The model `" + *name + "` does not exist.", "model");
}

PromptInput chat_prompt(const Json& body, const ServedModel& m) {
  const JsonFields f(body);
  const Json messages = chat_messages(f.raw("messages"));
  const std::string rendered = render_chat(f, m, messages);
  const Tokenizer& tok = need_tokenizer(m, "chat messages");
  PromptInput in;
  in.ids = tok.encode(rendered, EncodeOptions{f.boolean("add_special_tokens").value_or(false), false});
  in.text = rendered;
  return in;
}

GenerationRequest parse_chat_request(const Json& body, const ServedModel& m, const RequestLimits& limits) {
  const JsonFields f(body);
  check_model_name(body, m);
  GenerationRequest r;
  r.endpoint = Endpoint::Chat;
  parse_sampling(f, m, limits, r);
  parse_logprobs_chat(f, r);
  // max_completion_tokens is the newer name; it wins when both are given (as in vLLM).
  std::optional<int64_t> max_tokens = f.integer("max_tokens", 1, INT32_MAX);
  std::string max_param = "max_tokens";
  if (auto mct = f.integer("max_completion_tokens", 1, INT32_MAX)) {
    max_tokens = mct;
    max_param = "max_completion_tokens";
  }
  r.prompts.push_back(chat_prompt(body, m));
  finish_prompts(r, m, max_tokens, max_param, limits, "messages");
  return r;
}

GenerationRequest parse_completion_request(const Json& body, const ServedModel& m, const RequestLimits& limits) {
  const JsonFields f(body);
  check_model_name(body, m);
  GenerationRequest r;
  r.endpoint = Endpoint::Completion;
  parse_sampling(f, m, limits, r);
  if (auto lp = f.integer("logprobs", 0, SamplingParams::kMaxLogprobs)) {
    r.logprobs = true;
    r.top_logprobs = static_cast<int32_t>(*lp);
  }
  r.echo = f.boolean("echo").value_or(false);
  if (r.echo && r.logprobs)
    bad_request("echo together with logprobs needs prompt log-probabilities, which this server does not compute",
                "echo");
  if (auto best_of = f.integer("best_of", 1, INT32_MAX); best_of && *best_of != r.n)
    bad_request("best_of must equal n (best_of > n is not supported)", "best_of");
  const std::optional<int64_t> max_tokens = f.integer("max_tokens", 1, INT32_MAX);
  r.prompts = completion_prompts(f, m, limits);
  finish_prompts(r, m, max_tokens, "max_tokens", limits, "prompt");
  return r;
}

}  // namespace inferdesk::server
