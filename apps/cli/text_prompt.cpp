#include "apps/cli/text_prompt.h"

#include "core/chat/model_templates.h"
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

EncodedPrompt encode_prompt(const Tokenizer& tok, const std::filesystem::path& model_dir,
                            const TextPromptOptions& opts) {
  EncodedPrompt out;
  if (!opts.chat) {
    out.rendered = opts.prompt;
    out.ids = tok.encode(opts.prompt, /*add_special_tokens=*/true);
    return out;
  }
  const chat::ModelChatTemplates templates = chat::load_model_chat_templates(model_dir);
  const std::optional<std::string_view> name =
      opts.template_name.empty() ? std::nullopt : std::optional<std::string_view>(opts.template_name);
  const chat::ChatTemplate tpl = templates.parse(name, /*has_tools=*/false);
  chat::Json messages = chat::Json::array();
  if (!opts.system.empty()) messages.push_back({{"role", "system"}, {"content", opts.system}});
  messages.push_back({{"role", "user"}, {"content", opts.prompt}});
  chat::Json kwargs = chat::Json::object();
  if (!opts.chat_template_kwargs.empty()) {
    kwargs = parse_untrusted_ordered_json(opts.chat_template_kwargs, "--chat-template-kwargs");
    if (!kwargs.is_object())
      throw Error(ErrorCode::InvalidArgument,
                  "--chat-template-kwargs must be a JSON object, e.g. '{\"enable_thinking\": false}'");
  }
  out.rendered = chat::apply_chat_template(tpl, messages, nullptr, /*add_generation_prompt=*/true,
                                           templates.bos_token, templates.eos_token, kwargs);
  out.ids = tok.encode(out.rendered, /*add_special_tokens=*/false);
  return out;
}

}  // namespace inferdesk::cli
