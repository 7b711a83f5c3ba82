// Chat templates and special tokens found in model folders the way transformers finds them, and the
// context apply_chat_template builds.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/chat/chat_template.h"
#include "core/chat/model_templates.h"

namespace inferdesk::chat {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("inferdesk-chat-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name, std::ios::binary) << text;
  }

 private:
  fs::path path_;
};

ErrorCode error_code(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "expected an inferdesk::Error";
  return ErrorCode::Internal;
}

TEST(ChatLoader, NamedTemplatesAndSelection) {
  TempDir dir;
  dir.write("tokenizer_config.json", R"({
    "bos_token": {"__type": "AddedToken", "content": "<BOS>", "lstrip": false},
    "eos_token": "<EOS>",
    "chat_template": [{"name": "default", "template": "D{{ bos_token }}"},
                      {"name": "tool_use", "template": "T{{ tools | length }}"},
                      {"name": "rag", "template": "R"}]})");
  const ModelChatTemplates m = load_model_chat_templates(dir.path());
  ASSERT_EQ(m.templates.size(), 3u);
  EXPECT_EQ(m.bos_token, "<BOS>");
  EXPECT_EQ(m.eos_token, "<EOS>");
  EXPECT_EQ(m.select(std::nullopt, false).name, "default");
  EXPECT_EQ(m.select(std::nullopt, true).name, "tool_use");  // transformers picks tool_use when tools are given
  EXPECT_EQ(m.select("rag", true).name, "rag");
  EXPECT_EQ(error_code([&] { m.select("missing", false); }), ErrorCode::NotFound);

  const ChatTemplate tpl = m.parse(std::nullopt, false);
  EXPECT_EQ(apply_chat_template(tpl, Json::array(), nullptr, false, m.bos_token, m.eos_token, nullptr), "D<BOS>");
  EXPECT_NE(tpl.name().find("#default"), std::string::npos);
}

TEST(ChatLoader, JinjaFileReplacesConfigTemplatesAndAdditionalOnesAreNamed) {
  TempDir dir;
  dir.write("tokenizer_config.json", R"({"chat_template": "from config", "eos_token": "</s>"})");
  dir.write("chat_template.jinja", "from jinja file\n");
  dir.write("additional_chat_templates/tool_use.jinja", "tools!");
  const ModelChatTemplates m = load_model_chat_templates(dir.path());
  ASSERT_EQ(m.templates.size(), 2u);
  EXPECT_EQ(m.select(std::nullopt, false).source, "from jinja file\n");
  EXPECT_EQ(m.select(std::nullopt, true).source, "tools!");
  EXPECT_FALSE(m.bos_token.has_value());
  EXPECT_EQ(m.eos_token, "</s>");
  // The trailing newline of the file is dropped by the renderer, as jinja2 does.
  EXPECT_EQ(m.parse(std::nullopt, false).render(Json::object()), "from jinja file");
}

TEST(ChatLoader, LegacyChatTemplateJsonAndSpecialTokensMap) {
  TempDir dir;
  dir.write("chat_template.json", R"({"chat_template": "{{ messages | length }}"})");
  dir.write("special_tokens_map.json", R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>"})");
  const ModelChatTemplates m = load_model_chat_templates(dir.path());
  EXPECT_EQ(m.bos_token, "<s>");
  EXPECT_EQ(m.eos_token, "</s>");
  EXPECT_EQ(m.parse(std::nullopt, false).render(Json{{"messages", Json::array({1, 2})}}), "2");
}

TEST(ChatLoader, MalformedFilesAreFormatErrors) {
  TempDir dir;
  EXPECT_EQ(error_code([&] { load_model_chat_templates(dir.path()); }), ErrorCode::NotFound);
  EXPECT_EQ(error_code([&] { load_model_chat_templates(dir.path() / "nope"); }), ErrorCode::NotFound);
  dir.write("tokenizer_config.json", "{ not json");
  EXPECT_EQ(error_code([&] { load_model_chat_templates(dir.path()); }), ErrorCode::Format);
  dir.write("tokenizer_config.json", R"({"chat_template": 42})");
  EXPECT_EQ(error_code([&] { load_model_chat_templates(dir.path()); }), ErrorCode::Format);
  dir.write("tokenizer_config.json", R"({"chat_template": [{"name": "default"}]})");
  EXPECT_EQ(error_code([&] { load_model_chat_templates(dir.path()); }), ErrorCode::Format);
  dir.write("tokenizer_config.json", R"({"chat_template": [{"name": "a", "template": "x"},
                                                            {"name": "a", "template": "y"}]})");
  EXPECT_EQ(error_code([&] { load_model_chat_templates(dir.path()); }), ErrorCode::Format);
  dir.write("tokenizer_config.json", R"({"chat_template": [{"name": "a", "template": "x"}]})");
  const ModelChatTemplates m = load_model_chat_templates(dir.path());
  EXPECT_EQ(error_code([&] { m.select(std::nullopt, false); }), ErrorCode::NotFound);  // no "default"
  dir.write("tokenizer_config.json", R"([1, 2])");
  EXPECT_EQ(error_code([&] { load_model_chat_templates(dir.path()); }), ErrorCode::Format);
}

TEST(ChatLoader, RealModelFolders) {
  const fs::path tok = fs::path(INFERDESK_SHARED_DIR) / "tokenizers";
  if (!fs::exists(tok)) GTEST_SKIP() << "no shared tokenizers at " << tok;
  // Qwen3: template in tokenizer_config.json, bos_token null, eos "<|im_end|>".
  const ModelChatTemplates qwen = load_model_chat_templates(tok / "Qwen3");
  EXPECT_FALSE(qwen.bos_token.has_value());
  EXPECT_EQ(qwen.eos_token, "<|im_end|>");
  const ChatTemplate q = qwen.parse(std::nullopt, false);
  const Json messages = Json::array({Json{{"role", "user"}, {"content", "Hi"}}});
  EXPECT_EQ(apply_chat_template(q, messages, nullptr, true, qwen.bos_token, qwen.eos_token,
                                Json{{"enable_thinking", false}}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  // Llama 2: AddedToken objects for bos/eos.
  const ModelChatTemplates llama = load_model_chat_templates(tok / "Llama-2-7b-chat-hf");
  EXPECT_EQ(llama.bos_token, "<s>");
  EXPECT_EQ(llama.eos_token, "</s>");
  EXPECT_EQ(apply_chat_template(llama.parse(std::nullopt, false), messages, nullptr, true, llama.bos_token,
                                llama.eos_token, nullptr),
            "<s>[INST] Hi [/INST]");
  // gemma-4: chat_template.jinja beside a config without a template.
  const ModelChatTemplates gemma = load_model_chat_templates(tok / "gemma-4");
  EXPECT_NE(gemma.select(std::nullopt, false).origin.find("chat_template.jinja"), std::string::npos);
  // A base model without any chat template.
  EXPECT_EQ(error_code([&] { load_model_chat_templates(tok / "Mixtral-8x7B-v0.1"); }), ErrorCode::NotFound);
}

TEST(ChatContext, BuiltLikeTransformers) {
  const Json messages = Json::array({Json{{"role", "user"}, {"content", "x"}}});
  const Json ctx = build_chat_context(messages, nullptr, true, std::string("<s>"), std::nullopt,
                                      Json{{"enable_thinking", false}, {"bos_token", "<B>"}});
  EXPECT_EQ(ctx["messages"], messages);
  EXPECT_TRUE(ctx["tools"].is_null());
  EXPECT_TRUE(ctx.contains("documents"));
  EXPECT_TRUE(ctx["documents"].is_null());
  EXPECT_EQ(ctx["add_generation_prompt"], true);
  EXPECT_EQ(ctx["bos_token"], "<B>");  // kwargs override special tokens, as in transformers
  EXPECT_FALSE(ctx.contains("eos_token"));
  EXPECT_EQ(ctx["enable_thinking"], false);

  const ChatTemplate tpl = ChatTemplate::parse(
      "{{ tools is none }} {{ documents is none }} {{ eos_token is defined }}");
  EXPECT_EQ(apply_chat_template(tpl, messages, nullptr, false, std::nullopt, std::nullopt, nullptr), "True True False");

  EXPECT_EQ(error_code([&] { build_chat_context(Json::object(), nullptr, false, {}, {}, nullptr); }),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(error_code([&] { build_chat_context(Json::array({1}), nullptr, false, {}, {}, nullptr); }),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(error_code([&] { build_chat_context(messages, Json::object(), false, {}, {}, nullptr); }),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(error_code([&] {
              build_chat_context(messages, nullptr, false, {}, {}, Json{{"messages", 1}});
            }),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(error_code([&] {
              build_chat_context(messages, nullptr, false, {}, {}, Json{{"documents", 1}});
            }),
            ErrorCode::InvalidArgument);
  const Json docs = Json::array({Json{{"title", "t"}, {"text", "x"}}});
  EXPECT_EQ(build_chat_context(messages, nullptr, false, {}, {}, Json{{"documents", docs}})["documents"], docs);
}

TEST(ChatContext, KeyOrderOfToolsIsKept) {
  // tojson must keep the order the caller wrote (Python dicts are insertion-ordered).
  const Json tools = Json::parse(
      R"([{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}])");
  const ChatTemplate tpl = ChatTemplate::parse("{{ tools[0] | tojson }}");
  EXPECT_EQ(apply_chat_template(tpl, Json::array(), tools, false, {}, {}, nullptr),
            R"({"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}})");
}

}  // namespace
}  // namespace inferdesk::chat
