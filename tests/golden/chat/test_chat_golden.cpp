// Every (template, conversation) pair of reference.json renders exactly as Hugging Face transformers
// rendered it, or raises where transformers raised. The templates are read from ../shared (not copied
// into the project); reference.json and conversations.json come from tools/chat/make_reference.py.
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/chat/chat_template.h"
#include "core/chat/model_templates.h"

namespace inferdesk::chat {
namespace {

namespace fs = std::filesystem;

Json load(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  return Json::parse(in);
}

RenderOptions fixed_clock(const Json& meta) {
  // The reference pinned strftime_now() to meta.fixed_now ("2025-03-14T09:26:53").
  std::tm tm{};
  std::istringstream ss(meta.at("fixed_now").get<std::string>());
  char sep;
  ss >> tm.tm_year >> sep >> tm.tm_mon >> sep >> tm.tm_mday >> sep >> tm.tm_hour >> sep >> tm.tm_min >> sep >>
      tm.tm_sec;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  timegm(&tm);  // fills tm_wday / tm_yday
  RenderOptions o;
  o.fixed_now = tm;
  return o;
}

std::string show_diff(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i > 60 ? i - 60 : 0;
  std::ostringstream ss;
  ss << "first difference at byte " << i << " (lengths " << want.size() << " vs " << got.size() << ")\n"
     << "   want: " << Json(want.substr(from, 140)).dump() << "\n"
     << "   got:  " << Json(got.substr(from, 140)).dump();
  return ss.str();
}

class ChatGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path dir = fs::path(INFERDESK_SOURCE_DIR) / "tests/golden/chat";
    reference_ = load(dir / "reference.json");
    conversations_ = load(dir / "conversations.json");
    shared_ = INFERDESK_SHARED_DIR;
    if (!fs::exists(shared_ / "chat-templates")) GTEST_SKIP() << "no shared test data at " << shared_;
  }
  Json reference_, conversations_;
  fs::path shared_;
};

TEST_F(ChatGolden, EveryTemplateMatchesTransformers) {
  RenderOptions options = fixed_clock(reference_["meta"]);
  RenderStats stats;
  options.stats = &stats;
  uint64_t max_steps = 0;
  std::string max_pair;
  const Json& tool_sets = conversations_["tool_sets"];
  size_t pairs = 0, matched = 0, both_raised = 0;
  std::vector<std::string> failures;
  for (const Json& entry : reference_["templates"]) {
    const std::string id = entry["id"].get<std::string>();
    const std::string select = entry["select"].is_null() ? "default" : entry["select"].get<std::string>();
    std::optional<std::string> bos, eos;
    if (entry["bos_token"].is_string()) bos = entry["bos_token"].get<std::string>();
    if (entry["eos_token"].is_string()) eos = entry["eos_token"].get<std::string>();
    std::optional<ChatTemplate> tpl;
    std::string parse_error;
    try {
      for (const NamedTemplate& t : read_chat_template_file(shared_ / entry["path"].get<std::string>())) {
        if (t.name == select) tpl = ChatTemplate::parse(t.source, id);
      }
      if (!tpl) parse_error = "template '" + select + "' not found in the file";
    } catch (const Error& e) {
      parse_error = e.what();
    }
    for (const Json& conv : conversations_["conversations"]) {
      const std::string name = conv["name"].get<std::string>();
      const Json& want = entry["results"][name];
      ++pairs;
      std::string got, error = parse_error;
      if (error.empty()) {
        try {
          const Json tools = conv["tools"].is_null() ? Json() : tool_sets[conv["tools"].get<std::string>()];
          Json kwargs = conv["kwargs"];
          if (conv.contains("documents")) kwargs["documents"] = conv["documents"];
          got = apply_chat_template(*tpl, conv["messages"], tools, conv["add_generation_prompt"].get<bool>(), bos, eos,
                                    kwargs, options);
        } catch (const Error& e) {
          error = e.what();
        }
        if (stats.work_steps > max_steps) {
          max_steps = stats.work_steps;
          max_pair = id + " / " + name;
        }
      }
      if (want.contains("error")) {
        if (!error.empty()) {
          ++both_raised;
          ++matched;
        } else {
          failures.push_back(id + " / " + name + ": transformers raised (" + want["error"].get<std::string>() +
                             ") but InferDesk rendered " + std::to_string(got.size()) + " bytes");
        }
        continue;
      }
      const std::string text = want["text"].get<std::string>();
      if (!error.empty()) {
        failures.push_back(id + " / " + name + ": InferDesk raised: " + error);
      } else if (got != text) {
        failures.push_back(id + " / " + name + ": " + show_diff(text, got));
      } else {
        ++matched;
      }
    }
  }
  std::ostringstream report;
  for (const std::string& f : failures) report << f << "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << pairs << " (template, conversation) pairs differ:\n"
                                << report.str();
  EXPECT_GT(pairs, 1500u);  // 96 templates x 17 conversations when the shared data is complete
  std::printf("%zu of %zu pairs identical to transformers (%zu of them raise in both)\n", matched, pairs, both_raised);
  // The work budget leaves real templates a wide margin (core/chat/README.md records the figures).
  std::printf("most work: %llu steps (%s)\n", static_cast<unsigned long long>(max_steps), max_pair.c_str());
  EXPECT_LT(max_steps * 100, RenderLimits{}.max_work_steps) << max_pair;
}

// A long chat (256 messages of 4 KB, 1 MB of text: about twice the largest supported context) stays
// under half the work limit with every template. Work grows with the data a template copies,
// quadratically where a template rebuilds the prompt by concatenation (Reka-Edge), as in jinja2.
TEST_F(ChatGolden, LongChatsStayFarUnderTheWorkLimit) {
  Json chat = Json::array({Json{{"role", "system"}, {"content", std::string(4096, 's')}}});
  for (int i = 0; i < 255; ++i) {
    chat.push_back(Json{{"role", i % 2 ? "assistant" : "user"}, {"content", std::string(4096, 'a' + i % 26)}});
  }
  RenderOptions options = fixed_clock(reference_["meta"]);
  RenderStats stats;
  options.stats = &stats;
  uint64_t max_steps = 0;
  std::string max_id;
  size_t rendered = 0;
  for (const Json& entry : reference_["templates"]) {
    const std::string id = entry["id"].get<std::string>();
    const std::string select = entry["select"].is_null() ? "default" : entry["select"].get<std::string>();
    std::optional<ChatTemplate> tpl;
    try {
      for (const NamedTemplate& t : read_chat_template_file(shared_ / entry["path"].get<std::string>())) {
        if (t.name == select) tpl = ChatTemplate::parse(t.source, id);
      }
    } catch (const Error&) {
    }
    if (!tpl) continue;
    try {
      apply_chat_template(*tpl, chat, nullptr, true, std::string("<s>"), std::string("</s>"), Json::object(), options);
      ++rendered;
    } catch (const TemplateError& e) {
      EXPECT_NE(e.kind(), TemplateError::Kind::Limit) << id << ": " << e.what();  // others may refuse the chat
    }
    if (stats.work_steps > max_steps) {
      max_steps = stats.work_steps;
      max_id = id;
    }
  }
  EXPECT_GT(rendered, 50u);
  std::printf("long chat: %zu templates rendered, most work %llu steps (%s)\n", rendered,
              static_cast<unsigned long long>(max_steps), max_id.c_str());
  EXPECT_LT(max_steps * 2, RenderLimits{}.max_work_steps) << max_id;
}

}  // namespace
}  // namespace inferdesk::chat
