// Timing of chat-template parsing and rendering on real templates (not a test; prints medians).
//   cmake --build build --target bench_chat_template && ./build/tests/unit/chat/bench_chat_template
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/chat/model_templates.h"

namespace {

using inferdesk::chat::ChatTemplate;
using inferdesk::chat::Json;
using clk = std::chrono::steady_clock;

template <typename F>
double median_us(int reps, F f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto start = clk::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(clk::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  namespace fs = std::filesystem;
  const fs::path shared = INFERDESK_SHARED_DIR;
  std::ifstream in(fs::path(INFERDESK_SOURCE_DIR) / "tests/golden/chat/conversations.json");
  const Json conv = Json::parse(in);
  const Json& chat = conv["conversations"][4];  // system + user with two tools
  const Json& tools = conv["tool_sets"]["weather"];
  Json long_chat = Json::array();
  for (int i = 0; i < 200; ++i) {
    long_chat.push_back(Json{{"role", i % 2 ? "assistant" : "user"}, {"content", std::string(2000, 'a' + i % 26)}});
  }
  std::printf("%-40s %10s %14s %18s\n", "template", "parse us", "tools render us", "200x2KB render us");
  for (const char* rel :
       {"tokenizers/Qwen3/tokenizer_config.json", "tokenizers/gpt-oss/chat_template.jinja",
        "chat-templates/meta-llama-Llama-3.1-8B-Instruct.jinja", "chat-templates/google-gemma-4-31B-it.jinja"}) {
    const std::string src = inferdesk::chat::read_chat_template_file(shared / rel)[0].source;
    const double parse = median_us(101, [&] { ChatTemplate::parse(src, rel); });
    const ChatTemplate tpl = ChatTemplate::parse(src, rel);
    const double render = median_us(101, [&] {
      apply_chat_template(tpl, chat["messages"], tools, true, std::string("<s>"), std::string("</s>"), Json::object());
    });
    const double long_render = median_us(21, [&] {
      apply_chat_template(tpl, long_chat, nullptr, true, std::string("<s>"), std::string("</s>"), Json::object());
    });
    std::printf("%-40s %10.0f %14.0f %18.0f\n", fs::path(rel).filename().string().c_str() + 0, parse, render,
                long_render);
  }
  return 0;
}
