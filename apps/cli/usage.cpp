#include "apps/cli/usage.h"

#include <cstdio>
#include <string>
#include <vector>

namespace inferdesk::cli {

namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

bool explain_missing_command(CLI::App& app) {
  if (!app.get_subcommands().empty()) return false;
  const std::vector<std::string> rest = app.remaining();
  if (rest.empty())
    std::fprintf(stderr, "inferdesk-cli: no command given.\n");
  else if (rest.front().rfind('-', 0) == 0)
    std::fprintf(stderr, "inferdesk-cli: no command given (got '%s').\n", joined(rest).c_str());
  else
    std::fprintf(stderr, "inferdesk-cli: unknown command '%s'.\n", rest.front().c_str());
  std::fprintf(stderr, "usage: inferdesk-cli COMMAND [OPTIONS]; 'inferdesk-cli COMMAND --help' lists a "
                       "command's options.\ncommands:\n");
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    std::fprintf(stderr, "  %-16s %s\n", sub->get_name().c_str(), sub->get_description().c_str());
  std::fprintf(stderr, "The desktop app is 'inferdesk' (options such as --data-dir are its own).\n");
  return true;
}

}  // namespace inferdesk::cli
