#include "apps/cli/text_prompt.h"

#include <functional>

#include "core/chat/model_templates.h"
#include "core/chat/prompt_tokens.h"
#include "core/util/error.h"
#include "core/util/json_guard.h"

namespace inferdesk::cli {

Tokenizer load_tokenizer_for(const std::filesystem::path& model_dir) {
  try {
    return Tokenizer::from_dir(model_dir);
  } catch (const Error& e) {
    throw Error(e.code(), std::string("--prompt needs the model's tokenizer: ") + e.what());
  }
}

namespace {

constexpr EncodeOptions kParse{false, false};

chat::Json chat_messages(const std::string& system, const std::string& user) {
  chat::Json messages = chat::Json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", user}});
  return messages;
}

// Renders with sentinels in place of the system and user text, so the user's text can be
// tokenized with special tokens kept plain (chat::tokenize_with_plain_parts). Empty result when the
// template transforms the text (e.g. strips it), so splicing would not reproduce the prompt.
std::vector<int32_t> splice_plain_text(const Tokenizer& tok, const std::string& rendered,
                                       const std::function<std::string(const chat::Json&)>& render,
                                       const std::string& system, const std::string& user) {
  static const std::string kSys = "\x1e\x1fINFERDESK-SYSTEM\x1f\x1e";
  static const std::string kUser = "\x1e\x1fINFERDESK-USER\x1f\x1e";
  const std::string skeleton = render(chat_messages(system.empty() ? "" : kSys, kUser));
  return chat::tokenize_with_plain_parts(tok, rendered, skeleton, {{kSys, system}, {kUser, user}});
}

}  // namespace

EncodedPrompt encode_prompt(const Tokenizer& tok, const std::filesystem::path& model_dir,
                            const TextPromptOptions& opts) {
  EncodedPrompt out;
  const bool protect = !opts.parse_special_tokens;
  if (!opts.chat) {
    out.rendered = opts.prompt;
    const bool plain = protect && chat::has_special_token_text(tok, opts.prompt);
    out.ids = tok.encode(opts.prompt, EncodeOptions{true, plain});
    return out;
  }
  const chat::ModelChatTemplates templates = chat::load_model_chat_templates(model_dir);
  const std::optional<std::string_view> name =
      opts.template_name.empty() ? std::nullopt : std::optional<std::string_view>(opts.template_name);
  const chat::ChatTemplate tpl = templates.parse(name, /*has_tools=*/false);
  chat::Json kwargs = chat::Json::object();
  if (!opts.chat_template_kwargs.empty()) {
    kwargs = parse_untrusted_ordered_json(opts.chat_template_kwargs, "--chat-template-kwargs");
    if (!kwargs.is_object())
      throw Error(ErrorCode::InvalidArgument,
                  "--chat-template-kwargs must be a JSON object, e.g. '{\"enable_thinking\": false}'");
  }
  auto render = [&](const chat::Json& messages) {
    return chat::apply_chat_template(tpl, messages, nullptr, /*add_generation_prompt=*/true,
                                     templates.bos_token, templates.eos_token, kwargs);
  };
  out.rendered = render(chat_messages(opts.system, opts.prompt));
  if (protect && (chat::has_special_token_text(tok, opts.prompt) ||
                  chat::has_special_token_text(tok, opts.system))) {
    out.ids = splice_plain_text(tok, out.rendered, render, opts.system, opts.prompt);
    if (!out.ids.empty()) return out;
    out.warning = "the chat template changes the message text, so special-token strings in it "
                  "could not be kept as plain text; they are parsed as control tokens";
  }
  out.ids = tok.encode(out.rendered, kParse);
  return out;
}

}  // namespace inferdesk::cli
