#include "apps/cli/requests_file.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <type_traits>

#include "apps/cli/cli_common.h"
#include "core/util/error.h"
#include "core/util/json_guard.h"

namespace inferdesk::cli {

namespace {

std::string where(size_t line) { return "requests line " + std::to_string(line); }

// Every key a line may have: a misspelt sampling field would otherwise be ignored.
constexpr const char* kKnownFields[] = {
    "prompt",   "messages",   "prompt_ids",         "max_tokens",       "temperature",       "top_p",
    "top_k",    "min_p",      "repetition_penalty", "presence_penalty", "frequency_penalty", "seed",
    "logprobs", "ignore_eos", "stop_token_ids",     "stop_ids"};

void check_known_fields(const chat::Json& j, size_t line) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::any_of(std::begin(kKnownFields), std::end(kKnownFields), [&](const char* k) { return it.key() == k; }))
      continue;
    std::string known;
    for (const char* k : kKnownFields) known += (known.empty() ? "" : ", ") + std::string(k);
    throw Error(ErrorCode::InvalidArgument, where(line) + ": unknown field '" + it.key() + "' (known: " + known + ")");
  }
}

// A JSON integer that fits T: nlohmann's get<int>() would truncate 1.5 and wrap 2^40.
template <typename T>
bool fits_integer(const chat::Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  if (!v.is_number_integer()) return false;
  const int64_t x = v.get<int64_t>();
  return x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
         (x < 0 || static_cast<uint64_t>(x) <= static_cast<uint64_t>(std::numeric_limits<T>::max()));
}

[[noreturn]] void wrong_type(const char* key, const char* want, const chat::Json& v, size_t line) {
  std::string got = v.dump();
  if (got.size() > 40) got = got.substr(0, 40) + "...";
  throw Error(ErrorCode::InvalidArgument, where(line) + ": field '" + key + "' must be " + want + ", got " + got);
}

template <typename T>
void read_field(const chat::Json& j, const char* key, T& out, size_t line) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) wrong_type(key, "true or false", *it, line);
  } else if constexpr (std::is_integral_v<T>) {
    if (!fits_integer<T>(*it)) wrong_type(key, "an integer in range", *it, line);
  } else {
    if (!it->is_number()) wrong_type(key, "a number", *it, line);
  }
  out = it->get<T>();
}

// Token ids: integers 0..INT32_MAX (1.5 or -1 is a mistake, not id 1 or a huge id).
void read_ids(const chat::Json& j, const char* key, std::vector<int32_t>& out, size_t line) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (!it->is_array()) wrong_type(key, "an array of token ids", *it, line);
  out.clear();
  for (const chat::Json& v : *it) {
    if (!fits_integer<int32_t>(v) || v.get<int64_t>() < 0)
      wrong_type(key, "an array of token ids (integers >= 0)", v, line);
    out.push_back(v.get<int32_t>());
  }
}

// Exactly one prompt source per line; names what the line has when it is not one.
std::string prompt_source(const chat::Json& j, size_t line) {
  std::vector<std::string> found;
  for (const char* key : {"prompt", "messages", "prompt_ids"})
    if (j.contains(key) && !j[key].is_null()) found.emplace_back(key);
  if (found.size() == 1) return found.front();
  std::string has = found.empty() ? "none of them" : "";
  for (size_t i = 0; i < found.size(); ++i)
    has += (i == 0 ? "\"" : (i + 1 == found.size() ? " and \"" : ", \"")) + found[i] + "\"";
  throw Error(ErrorCode::InvalidArgument, where(line) +
                                              ": give exactly one of \"prompt\" (text), \"messages\" (chat) or "
                                              "\"prompt_ids\" (token ids); this line has " +
                                              has);
}

void check_messages(const chat::Json& messages, size_t line) {
  if (!messages.is_array() || messages.empty())
    throw Error(ErrorCode::InvalidArgument, where(line) + ": \"messages\" must be a non-empty array of "
                                                          "{\"role\": ..., \"content\": ...} objects");
  for (size_t i = 0; i < messages.size(); ++i)
    if (!messages[i].is_object() || !messages[i].contains("role") || !messages[i]["role"].is_string())
      throw Error(ErrorCode::InvalidArgument, where(line) + ": message " + std::to_string(i + 1) +
                                                  " needs a \"role\" string (e.g. \"user\") and a \"content\"");
}

RequestLine read_line(const chat::Json& j, size_t line, const std::filesystem::path& model_dir,
                      const TextPromptOptions& text, std::optional<Tokenizer>& tok) {
  if (!j.is_object())
    throw Error(ErrorCode::InvalidArgument, where(line) + ": expected a JSON object, e.g. "
                                                          "{\"prompt\": \"Hello\"}");
  RequestLine r;
  r.line = line;
  r.fields = j;
  check_known_fields(j, line);
  const std::string source = prompt_source(j, line);
  if (source == "prompt_ids") {
    read_ids(j, "prompt_ids", r.prompt_ids, line);
    if (r.prompt_ids.empty()) throw Error(ErrorCode::InvalidArgument, where(line) + ": \"prompt_ids\" is empty");
    return r;
  }
  if (!tok) tok = load_tokenizer_for(model_dir, where(line) + " (\"" + source + "\")");
  r.from_text = true;
  EncodedPrompt enc;
  if (source == "prompt") {
    if (!j["prompt"].is_string())
      throw Error(ErrorCode::InvalidArgument, where(line) + ": \"prompt\" must be a string");
    TextPromptOptions plain = text;
    plain.prompt = j["prompt"].get<std::string>();
    plain.chat = false;
    enc = encode_prompt(*tok, model_dir, plain);
  } else {
    check_messages(j["messages"], line);
    enc = encode_messages(*tok, model_dir, j["messages"], text);
  }
  if (enc.ids.empty()) throw Error(ErrorCode::InvalidArgument, where(line) + ": the prompt encodes to no tokens");
  r.prompt_ids = std::move(enc.ids);
  return r;
}

}  // namespace

std::vector<RequestLine> read_request_lines(const std::string& path, const std::filesystem::path& model_dir,
                                            const TextPromptOptions& text, std::optional<Tokenizer>& tokenizer) {
  std::ifstream in = open_input_file(path, "--requests");
  std::vector<RequestLine> out;
  std::string content;
  size_t line = 0;
  while (std::getline(in, content)) {
    ++line;
    if (content.find_first_not_of(" \t\r") == std::string::npos) continue;
    const chat::Json j = parse_untrusted_ordered_json(content, path + " line " + std::to_string(line));
    out.push_back(read_line(j, line, model_dir, text, tokenizer));
  }
  if (out.empty()) throw Error(ErrorCode::InvalidArgument, "requests file " + path + " has no requests");
  return out;
}

Request make_request(const RequestLine& r, SamplingParams base) {
  Request req;
  req.prompt_ids = r.prompt_ids;
  req.params = std::move(base);
  const chat::Json& j = r.fields;
  const size_t line = r.line;
  read_field(j, "max_tokens", req.params.max_tokens, line);
  read_field(j, "temperature", req.params.temperature, line);
  read_field(j, "top_p", req.params.top_p, line);
  read_field(j, "top_k", req.params.top_k, line);
  read_field(j, "min_p", req.params.min_p, line);
  read_field(j, "repetition_penalty", req.params.repetition_penalty, line);
  read_field(j, "presence_penalty", req.params.presence_penalty, line);
  read_field(j, "frequency_penalty", req.params.frequency_penalty, line);
  read_field(j, "logprobs", req.params.logprobs, line);
  read_field(j, "ignore_eos", req.params.ignore_eos, line);
  read_ids(j, "stop_token_ids", req.params.stop_token_ids, line);
  read_ids(j, "stop_ids", req.params.stop_token_ids, line);
  if (j.contains("seed") && !j["seed"].is_null()) {
    uint64_t s = 0;
    read_field(j, "seed", s, line);
    req.params.seed = s;
  }
  try {
    req.params.validate();
  } catch (const Error& e) {
    // Line 0 is the command line's own prompt (--prompt-ids, --prompt): no file line to name.
    if (line == 0) throw;
    throw Error(e.code(), where(line) + ": " + e.what());
  }
  return req;
}

}  // namespace inferdesk::cli
