#include "apps/cli/text_prompt.h"

#include <functional>

#include "core/chat/model_templates.h"
#include "core/chat/prompt_tokens.h"
#include "core/util/error.h"
#include "core/util/json_guard.h"

namespace inferdesk::cli {

Tokenizer load_tokenizer_for(const std::filesystem::path& model_dir, const std::string& needed_by) {
  try {
    return Tokenizer::from_dir(model_dir);
  } catch (const Error& e) {
    throw Error(e.code(), needed_by + " needs the model's tokenizer: " + e.what());
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

// Renders with a sentinel in place of every message's text, so that text can be tokenized with
// special tokens kept plain (chat::tokenize_with_plain_parts). Empty result when the template
// transforms the text (e.g. strips it), so splicing would not reproduce the prompt.
std::vector<int32_t> splice_plain_text(const Tokenizer& tok, const std::string& rendered,
                                       const std::function<std::string(const chat::Json&)>& render,
                                       const chat::Json& messages) {
  chat::Json skeleton = messages;
  std::vector<chat::PromptPart> parts;
  for (size_t i = 0; i < skeleton.size(); ++i) {
    const auto content = skeleton[i].find("content");
    if (content == skeleton[i].end() || !content->is_string() || content->get_ref<const std::string&>().empty())
      continue;
    std::string marker = "\x1e\x1fINFERDESK-PART-" + std::to_string(i) + "\x1f\x1e";
    parts.push_back({marker, content->get<std::string>()});
    *content = std::move(marker);
  }
  return chat::tokenize_with_plain_parts(tok, rendered, render(skeleton), parts);
}

bool any_special_token_text(const Tokenizer& tok, const chat::Json& messages) {
  for (const auto& m : messages) {
    const auto it = m.find("content");
    if (it != m.end() && it->is_string() && chat::has_special_token_text(tok, it->get_ref<const std::string&>()))
      return true;
  }
  return false;
}

}  // namespace

chat::Json parse_template_kwargs(const std::string& text) {
  if (text.empty()) return chat::Json::object();
  const chat::Json kwargs = parse_untrusted_ordered_json(text, "--chat-template-kwargs");
  if (!kwargs.is_object())
    throw Error(ErrorCode::InvalidArgument,
                "--chat-template-kwargs must be a JSON object, e.g. '{\"enable_thinking\": false}'");
  return kwargs;
}

EncodedPrompt encode_prompt(const Tokenizer& tok, const std::filesystem::path& model_dir,
                            const TextPromptOptions& opts) {
  if (opts.chat) return encode_messages(tok, model_dir, chat_messages(opts.system, opts.prompt), opts);
  EncodedPrompt out;
  out.rendered = opts.prompt;
  const bool plain = !opts.parse_special_tokens && chat::has_special_token_text(tok, opts.prompt);
  out.ids = tok.encode(opts.prompt, EncodeOptions{true, plain});
  return out;
}

EncodedPrompt encode_messages(const Tokenizer& tok, const std::filesystem::path& model_dir, const chat::Json& messages,
                              const TextPromptOptions& opts) {
  EncodedPrompt out;
  const chat::ModelChatTemplates templates = chat::load_model_chat_templates(model_dir);
  const std::optional<std::string_view> name = opts.template_name.empty()
                                                   ? std::nullopt
                                                   : std::optional<std::string_view>(opts.template_name);
  const chat::ChatTemplate tpl = templates.parse(name, /*has_tools=*/false);
  const chat::Json kwargs = parse_template_kwargs(opts.chat_template_kwargs);
  auto render = [&](const chat::Json& m) {
    return chat::apply_chat_template(tpl, m, nullptr, /*add_generation_prompt=*/true, templates.bos_token,
                                     templates.eos_token, kwargs);
  };
  out.rendered = render(messages);
  if (!opts.parse_special_tokens && any_special_token_text(tok, messages)) {
    out.ids = splice_plain_text(tok, out.rendered, render, messages);
    if (!out.ids.empty()) return out;
    out.warning = "the chat template changes the message text, so special-token strings in it "
                  "could not be kept as plain text; they are parsed as control tokens";
  }
  out.ids = tok.encode(out.rendered, kParse);
  return out;
}

}  // namespace inferdesk::cli
