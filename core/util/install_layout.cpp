#include "core/util/install_layout.h"

#include <string>
#include <system_error>

#include "core/util/error.h"

namespace inferdesk {
namespace {

// exe's folder, with the relative candidates below it resolved and normalised.
std::vector<std::filesystem::path> candidates(const std::filesystem::path& exe,
                                              std::initializer_list<const char*> rel) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::weakly_canonical(exe, ec);
  if (ec) real = std::filesystem::absolute(exe);
  std::vector<std::filesystem::path> out;
  for (const char* r : rel) out.push_back((real.parent_path() / r).lexically_normal());
  return out;
}

}  // namespace

std::filesystem::path executable_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(ErrorCode::Io, "cannot find this program's executable: " + ec.message());
  return p;
}

std::filesystem::path resources_dir(const std::filesystem::path& exe) {
  // Installed first; then a build tree inside the source tree (build/apps/cli, build/gui); then
  // the source tree this binary was built from (a build folder elsewhere).
  auto dirs = candidates(exe, {"../share/inferdesk", "../../../resources", "../../resources"});
  dirs.emplace_back(INFERDESK_SOURCE_RESOURCES);
  std::string looked;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (std::filesystem::is_directory(d / "shapes", ec)) return d;
    looked += (looked.empty() ? "" : ", ") + d.string();
  }
  throw Error(ErrorCode::NotFound, "InferDesk's resources (shapes/) are not installed beside " + exe.string() +
                                       " (looked in " + looked + "): reinstall the inferdesk package");
}

std::vector<std::filesystem::path> module_dirs(const std::filesystem::path& exe) {
  // <prefix>/lib/inferdesk beside <prefix>/bin; the build tree's lib/inferdesk beside build/gui
  // (the first) and build/apps/cli (the second).
  return candidates(exe, {"../lib/inferdesk", "../../lib/inferdesk"});
}

}  // namespace inferdesk
