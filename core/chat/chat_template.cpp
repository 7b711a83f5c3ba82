#include "core/chat/chat_template.h"

#include <new>
#include <stdexcept>

#include "core/chat/interp.h"
#include "core/chat/lexer.h"
#include "core/chat/parser.h"
#include "core/chat/pystr.h"

namespace inferdesk::chat {

namespace {

std::string location(const std::string& name, uint32_t line, uint32_t column) {
  if (line == 0) return name + ": ";
  return name + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

const char* python_name(EvalErrorKind kind) {
  switch (kind) {
    case EvalErrorKind::Type: return "TypeError";
    case EvalErrorKind::Value: return "ValueError";
    case EvalErrorKind::Undefined: return "UndefinedError";
    case EvalErrorKind::Security: return "SecurityError";
    case EvalErrorKind::ZeroDivision: return "ZeroDivisionError";
    case EvalErrorKind::Overflow: return "OverflowError";
    case EvalErrorKind::Raised: return "TemplateError";
    case EvalErrorKind::Limit: return "LimitError";
    case EvalErrorKind::Syntax: return "TemplateAssertionError";
  }
  return "Error";
}

TemplateError to_template_error(const EvalError& e, const std::string& name) {
  TemplateError::Kind kind = TemplateError::Kind::Runtime;
  std::string detail = std::string(python_name(e.kind())) + ": " + e.what();
  if (e.kind() == EvalErrorKind::Raised) {
    kind = TemplateError::Kind::Raised;
    detail = e.what();
  } else if (e.kind() == EvalErrorKind::Limit) {
    kind = TemplateError::Kind::Limit;
    detail = std::string("limit reached: ") + e.what();
  }
  return TemplateError(kind, name, e.line(), e.column(), detail);
}

}  // namespace

TemplateError::TemplateError(Kind kind, const std::string& template_name, uint32_t line, uint32_t column,
                             const std::string& detail)
    : Error(ErrorCode::Template, location(template_name, line, column) + detail),
      kind_(kind),
      line_(line),
      column_(column),
      detail_(detail) {}

struct ChatTemplate::Impl {
  std::string name;
  std::string source;
  Body body;
};

ChatTemplate ChatTemplate::parse(std::string source, std::string name) {
  auto impl = std::make_shared<Impl>();
  impl->name = std::move(name);
  impl->source = std::move(source);
  if (!py::is_valid_utf8(impl->source)) {
    throw TemplateError(TemplateError::Kind::Syntax, impl->name, 0, 0, "the template is not valid UTF-8");
  }
  try {
    impl->body = parse_template(lex(normalize_source(impl->source)));
  } catch (const SyntaxError& e) {
    throw TemplateError(TemplateError::Kind::Syntax, impl->name, e.line(), e.column(),
                        std::string("TemplateSyntaxError: ") + e.what());
  } catch (const std::bad_alloc&) {
    throw TemplateError(TemplateError::Kind::Limit, impl->name, 0, 0, "limit reached: out of memory while parsing");
  }
  return ChatTemplate(std::move(impl));
}

namespace {
template <typename J>
std::vector<std::pair<std::string, Value>> context_values(const J& context, const std::string& name) {
  if (!context.is_object()) {
    throw Error(ErrorCode::InvalidArgument, "the context for template '" + name + "' must be a JSON object");
  }
  std::vector<std::pair<std::string, Value>> vars;
  for (auto it = context.begin(); it != context.end(); ++it) vars.emplace_back(it.key(), from_json(it.value()));
  return vars;
}

template <typename J>
std::string render_impl(const std::string& name, const Body& body, const J& context, const RenderOptions& options) {
  try {
    Interp interp(options);
    struct Report {  // the cost also when the render fails
      const Interp& interp;
      RenderStats* stats;
      ~Report() {
        if (stats) stats->work_steps = interp.work_steps();
      }
    } report{interp, options.stats};
    return interp.render(body, context_values(context, name));
  } catch (const EvalError& e) {
    throw to_template_error(e, name);
  } catch (const std::bad_alloc&) {
    throw TemplateError(TemplateError::Kind::Limit, name, 0, 0, "limit reached: out of memory while rendering");
  } catch (const std::length_error&) {
    throw TemplateError(TemplateError::Kind::Limit, name, 0, 0, "limit reached: a string or list grew too long");
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // a bug of ours; still reported as a template error, not a crash
    throw TemplateError(TemplateError::Kind::Runtime, name, 0, 0, std::string("internal error: ") + e.what());
  }
}
}  // namespace

std::string ChatTemplate::render(const Json& context, const RenderLimits& limits) const {
  RenderOptions options;
  options.limits = limits;
  return render_impl(impl_->name, impl_->body, context, options);
}

std::string ChatTemplate::render(const Json& context, const RenderOptions& options) const {
  return render_impl(impl_->name, impl_->body, context, options);
}

std::string ChatTemplate::render(const nlohmann::json& context, const RenderLimits& limits) const {
  RenderOptions options;
  options.limits = limits;
  return render_impl(impl_->name, impl_->body, context, options);
}

const std::string& ChatTemplate::name() const { return impl_->name; }
const std::string& ChatTemplate::source() const { return impl_->source; }

Json parse_json_text(std::string_view text, const std::string& what) {
  constexpr size_t kMaxJsonDepth = 512;
  const size_t depth = json_nesting_depth(text);
  if (depth > kMaxJsonDepth) {
    throw Error(ErrorCode::Format, what + ": JSON nested " + std::to_string(depth) + " levels deep (at most " +
                                       std::to_string(kMaxJsonDepth) + " are accepted)");
  }
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::Format, what + ": invalid JSON: " + e.what());
  }
}

Json build_chat_context(const Json& messages, const Json& tools, bool add_generation_prompt,
                        const std::optional<std::string>& bos_token, const std::optional<std::string>& eos_token,
                        const Json& extra_kwargs) {
  if (!messages.is_array()) throw Error(ErrorCode::InvalidArgument, "messages must be a JSON array of message objects");
  for (const auto& m : messages) {
    if (!m.is_object()) throw Error(ErrorCode::InvalidArgument, "each message must be a JSON object");
  }
  if (!tools.is_null() && !tools.is_array()) {
    throw Error(ErrorCode::InvalidArgument, "tools must be a JSON array of tool schemas, or null");
  }
  if (!extra_kwargs.is_null() && !extra_kwargs.is_object()) {
    throw Error(ErrorCode::InvalidArgument, "extra template kwargs must be a JSON object, or null");
  }
  Json ctx = Json::object();
  ctx["messages"] = messages;
  ctx["tools"] = tools;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = add_generation_prompt;
  if (bos_token) ctx["bos_token"] = *bos_token;
  if (eos_token) ctx["eos_token"] = *eos_token;
  if (extra_kwargs.is_object()) {
    for (auto it = extra_kwargs.begin(); it != extra_kwargs.end(); ++it) {
      const std::string& key = it.key();
      if (key == "messages" || key == "tools" || key == "add_generation_prompt") {
        throw Error(ErrorCode::InvalidArgument, "extra template kwarg '" + key + "' would replace a chat argument");
      }
      if (key == "documents" && !it.value().is_null() && !it.value().is_array()) {
        throw Error(ErrorCode::InvalidArgument, "documents must be a JSON array of objects, or null");
      }
      ctx[key] = it.value();
    }
  }
  return ctx;
}

std::string apply_chat_template(const ChatTemplate& tpl, const Json& messages, const Json& tools,
                                bool add_generation_prompt, const std::optional<std::string>& bos_token,
                                const std::optional<std::string>& eos_token, const Json& extra_kwargs,
                                const RenderOptions& options) {
  return tpl.render(build_chat_context(messages, tools, add_generation_prompt, bos_token, eos_token, extra_kwargs),
                    options);
}

}  // namespace inferdesk::chat
