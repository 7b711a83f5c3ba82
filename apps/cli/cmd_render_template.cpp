// inferdesk-cli render-template --template FILE --context FILE.json
//
// Renders a chat template with the JSON object in FILE.json as the whole Jinja context (messages,
// tools, add_generation_prompt, bos_token, ...) and writes exactly the rendered text to stdout.
// A template that fails to parse or raises exits non-zero with the message on stderr (main.cpp
// prints the TemplateError).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "apps/cli/commands.h"
#include "core/chat/chat_template.h"
#include "core/util/error.h"

namespace inferdesk::cli {

namespace {

std::string read_text(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::NotFound, std::string("cannot open ") + what + " file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct RenderTemplateArgs {
  std::string template_file;
  std::string context_file;
};

void run_render_template(const RenderTemplateArgs& a) {
  const std::string source = read_text(a.template_file, "template");
  const chat::Json context = chat::parse_json_text(read_text(a.context_file, "context"), a.context_file);
  if (!context.is_object())
    throw Error(ErrorCode::InvalidArgument, a.context_file + ": the context must be a JSON object");
  const chat::ChatTemplate tpl = chat::ChatTemplate::parse(source, a.template_file);
  const std::string out = tpl.render(context);
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    throw Error(ErrorCode::Io, "cannot write the rendered template to stdout");
  }
}

}  // namespace

void register_render_template(CLI::App& app) {
  auto args = std::make_shared<RenderTemplateArgs>();
  CLI::App* cmd = app.add_subcommand("render-template",
                                     "Render a chat template with a JSON context; prints exactly the rendered text");
  cmd->add_option("--template", args->template_file, "Jinja chat template file")->required();
  cmd->add_option("--context", args->context_file, "JSON object used as the whole template context")->required();
  cmd->callback([args] { run_render_template(*args); });
}

}  // namespace inferdesk::cli
