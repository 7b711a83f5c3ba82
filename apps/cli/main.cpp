// inferdesk-cli entry point: dispatches to the subcommands in cmd_*.cpp.
#include <cstdio>
#include <exception>

#include "apps/cli/commands.h"
#include "apps/cli/usage.h"
#include "apps/cli/version.h"
#include "core/util/error.h"

namespace inferdesk::cli {
int& exit_status() {
  static int status = 0;
  return status;
}
}  // namespace inferdesk::cli

int main(int argc, char** argv) {
  CLI::App app{"InferDesk command line: run, benchmark and inspect local LLMs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", inferdesk::cli::version_text(),
                       "Print the version, the commit and the backends of this build");
  inferdesk::cli::register_generate(app);
  inferdesk::cli::register_bench(app);
  inferdesk::cli::register_tokenize(app);
  inferdesk::cli::register_render_template(app);
  inferdesk::cli::register_info(app);
  inferdesk::cli::register_quantize(app);
  inferdesk::cli::register_serve(app);
  inferdesk::cli::register_bench_serve(app);
  inferdesk::cli::register_download(app);
  inferdesk::cli::register_search(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const bool usage_error = e.get_exit_code() != static_cast<int>(CLI::ExitCodes::Success);
    if (usage_error && inferdesk::cli::explain_missing_command(app)) return inferdesk::cli::kUsageExitStatus;
    return app.exit(e);
  } catch (const inferdesk::Error& e) {
    std::fprintf(stderr, "inferdesk-cli: %s: %s\n", inferdesk::to_string(e.code()), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "inferdesk-cli: error: %s\n", e.what());
    return 1;
  }
  return inferdesk::cli::exit_status();
}
