// Chat templates: ChatTemplate::parse on fuzzed source, then render with a fuzzed context, or
// with a conversation built as apply_chat_template builds it (system, user, assistant with a tool
// call, tool reply, tools) when the input has none. Input: the multi-file format of
// fuzz_support.h; text before the first "%%FILE" line is the template, a part "context.json" is
// the render context (a JSON object), so a plain .jinja file is a valid input.
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

#include "core/chat/chat_template.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using inferdesk::chat::Json;

const Json& default_context() {
  static const Json context = [] {
    const Json messages = Json::parse(R"([
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "id": "call_1",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "22 C", "tool_call_id": "call_1"},
      {"role": "assistant", "content": "<think>ok</think>It is 22 C."},
      {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]}])");
    const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Current weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
    return inferdesk::chat::build_chat_context(messages, tools, true, "<s>", "</s>", Json::object());
  }();
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferdesk;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto parts = fuzz::split_parts(input, "template.jinja", 2);
  chat::RenderOptions options;
  options.fixed_now = std::tm{};  // strftime_now() without the clock: reproducible runs
  // A tenth of the default work budget: the default's worst case (0.4 s in a release build) takes
  // over the 10 s per input under ASan + UBSan at -O1. The default itself is tested in unit tests.
  options.limits.max_work_steps = 2'000'000;
  fuzz::expect_typed_errors([&] {
    const chat::ChatTemplate tpl = chat::ChatTemplate::parse(std::string(parts.front().content), "fuzz.jinja");
    const fuzz::Part* ctx = fuzz::find_part(parts, "context.json");
    if (ctx == nullptr) {
      (void)tpl.render(default_context(), options);
      return;
    }
    const Json context = chat::parse_json_text(ctx->content, "context.json");
    (void)tpl.render(context.is_object() ? context : default_context(), options);
  });
  return 0;
}
