// Chat templates: a sandboxed Jinja2-subset renderer that matches Hugging Face transformers.
//
// transformers renders chat templates with jinja2's ImmutableSandboxedEnvironment (trim_blocks,
// lstrip_blocks, loop controls, the {% generation %} tag), a tojson filter that is json.dumps(...,
// ensure_ascii=False) and the globals raise_exception() and strftime_now(). ChatTemplate reproduces
// that environment, Python value semantics included (str(True) is "True", floats print like repr(),
// dicts keep insertion order, lists and dicts cannot be mutated), so the rendered prompt is the one
// the model was trained on. Parse once, render many times (render is const and thread-safe).
//
//   auto tpl = ChatTemplate::parse(source, "Qwen3/tokenizer_config.json");
//   std::string prompt = apply_chat_template(tpl, messages, nullptr, /*add_generation_prompt=*/true,
//                                            bos, eos, {{"enable_thinking", false}});
//
// Every failure is a TemplateError (an inferdesk::Error with code Template) whose message starts with
// "name:line:column:"; a template that calls raise_exception("...") fails with that message.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/util/error.h"

namespace inferdesk::chat {

// JSON with object keys in document order (what Python's json.load gives a template).
using Json = nlohmann::ordered_json;

// Bounds on one render; exceeding one is a TemplateError of kind Limit, never a crash or a hang.
struct RenderLimits {
  size_t max_output_bytes = size_t{32} << 20;  // the output, and any string or list built on the way
  uint64_t max_loop_iterations = 1'000'000;    // all {% for %} iterations of one render together
  uint32_t max_call_depth = 64;                // nested macro calls (recursion)
  // Total work of one render, in steps: one per evaluated expression or statement, 8 per macro call,
  // one per 64 bytes or list item copied, built or compared. Bounds the time of any template (well
  // under 1 s of CPU at the default) and the string data it can create (1.25 GiB); the real templates
  // need < 0.1% of it for ordinary chats, < 50% for a 1 MB one (core/chat/README.md).
  uint64_t max_work_steps = 20'000'000;
};

// What one render cost, for measurements and tests.
struct RenderStats {
  uint64_t work_steps = 0;
};

struct RenderOptions {
  RenderLimits limits;
  // The local time strftime_now() formats; nullopt: the system clock. Tests pin it.
  std::optional<std::tm> fixed_now;
  // When set, receives the render's cost (also when it fails). Owned by the caller.
  RenderStats* stats = nullptr;
};

class TemplateError : public Error {
 public:
  enum class Kind {
    Syntax,   // the template does not parse
    Runtime,  // rendering failed (type error, undefined value, sandbox refusal, ...)
    Raised,   // the template called raise_exception(message)
    Limit,    // a RenderLimits bound was reached
  };
  TemplateError(Kind kind, const std::string& template_name, uint32_t line, uint32_t column, const std::string& detail);
  Kind kind() const { return kind_; }
  uint32_t line() const { return line_; }                // 1-based; 0 when unknown
  uint32_t column() const { return column_; }            // 1-based, in code points
  const std::string& detail() const { return detail_; }  // the message without the location

 private:
  Kind kind_;
  uint32_t line_, column_;
  std::string detail_;
};

class ChatTemplate {
 public:
  // Parses a template (throws TemplateError of kind Syntax). `name` is used in error messages.
  static ChatTemplate parse(std::string source, std::string name = "chat_template");

  // Renders with `context` (a JSON object) as the whole set of template variables.
  std::string render(const Json& context, const RenderLimits& limits = {}) const;
  std::string render(const Json& context, const RenderOptions& options) const;
  // nlohmann::json sorts object keys; prefer Json (ordered) where key order matters (tojson).
  std::string render(const nlohmann::json& context, const RenderLimits& limits = {}) const;

  const std::string& name() const;
  const std::string& source() const;

 private:
  struct Impl;
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Parses untrusted JSON text (a context file, tokenizer_config.json): Error(Format) naming `what`
// when it is not valid JSON or nests deeper than 512 levels (nlohmann's parser recurses per level).
Json parse_json_text(std::string_view text, const std::string& what);

// Builds the context the way transformers' apply_chat_template does — messages, tools (null when
// there are none), documents (null unless extra_kwargs has "documents", for RAG templates),
// add_generation_prompt, bos_token and eos_token (when known), then the extra kwargs (e.g.
// {"enable_thinking": false}) — and renders. messages must be an array of objects and extra_kwargs
// an object (or null); InvalidArgument otherwise.
Json build_chat_context(const Json& messages, const Json& tools, bool add_generation_prompt,
                        const std::optional<std::string>& bos_token, const std::optional<std::string>& eos_token,
                        const Json& extra_kwargs);
std::string apply_chat_template(const ChatTemplate& tpl, const Json& messages, const Json& tools,
                                bool add_generation_prompt, const std::optional<std::string>& bos_token,
                                const std::optional<std::string>& eos_token, const Json& extra_kwargs,
                                const RenderOptions& options = {});

}  // namespace inferdesk::chat
