// `inferdesk-cli render-template --template FILE --context FILE.json`: exactly the rendered text on
// stdout (no newline added), non-zero exit with the message on stderr when the template raises.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Result run_cli(const std::string& tpl, const std::string& context) {
  const fs::path dir = fs::temp_directory_path() / ("inferdesk-chat-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "t.jinja", std::ios::binary) << tpl;
  std::ofstream(dir / "c.json", std::ios::binary) << context;
  const std::string cmd = std::string("'") + INFERDESK_CLI + "' render-template --template '" +
                          (dir / "t.jinja").string() + "' --context '" + (dir / "c.json").string() + "' >'" +
                          (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  Result r;
  const int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

TEST(ChatCli, WritesExactlyTheRenderedText) {
  const Result r = run_cli("{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}{{ bos_token }}",
                           R"({"messages": [{"role": "user", "content": "héllo"}], "bos_token": "<s>"})");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "<user>héllo\n<s>");
  EXPECT_EQ(r.err, "");
}

TEST(ChatCli, TemplateThatRaisesExitsNonZeroWithTheMessage) {
  const Result r = run_cli("ok{{ raise_exception('roles must alternate') }}", "{}");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("roles must alternate"), std::string::npos) << r.err;
}

TEST(ChatCli, BadInputsFailCleanly) {
  EXPECT_NE(run_cli("{% if %}", "{}").status, 0);
  EXPECT_NE(run_cli("x", "[1, 2]").status, 0);
  const Result r = run_cli("x", "{ not json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("invalid JSON"), std::string::npos) << r.err;
}

}  // namespace
