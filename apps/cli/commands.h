// Each inferdesk-cli subcommand lives in its own file and registers itself on the CLI11 app.
// A subcommand's callback throws inferdesk::Error (or CLI::Error) on failure; main() turns that
// into a message on stderr and a non-zero exit status.
#pragma once

#include <CLI/CLI.hpp>

namespace inferdesk::cli {

void register_generate(CLI::App& app);
void register_bench(CLI::App& app);
void register_tokenize(CLI::App& app);  // tokenize + detokenize
void register_render_template(CLI::App& app);
void register_info(CLI::App& app);
void register_quantize(CLI::App& app);
void register_serve(CLI::App& app);
void register_bench_serve(CLI::App& app);
void register_download(CLI::App& app);  // the Hugging Face Hub: download + search
void register_search(CLI::App& app);

// Exit status a subcommand wants main() to return (set by callbacks that fail softly).
int& exit_status();

}  // namespace inferdesk::cli
