// Where an InferDesk program finds what is installed beside it, relative to its own executable,
// so a .deb, an unpacked .tar.gz and the build tree all work wherever they are:
//   <prefix>/bin/inferdesk-cli   <prefix>/share/inferdesk/shapes   <prefix>/lib/inferdesk/*.so
// A binary still in its build tree (build/apps/cli, build/gui) finds the source tree's
// resources/ and the build's lib/inferdesk/.
#pragma once

#include <filesystem>
#include <vector>

namespace inferdesk {

// The running program's executable, symlinks resolved (/proc/self/exe). Throws Error(Io).
std::filesystem::path executable_path();

// The folder holding shapes/ (the built-in model shapes) for a program at `exe`. Throws
// Error(NotFound) naming the places it looked in when there is none.
std::filesystem::path resources_dir(const std::filesystem::path& exe);

// Folders to look for run-time modules (libinferdesk-cuda.so) in, most specific first.
std::vector<std::filesystem::path> module_dirs(const std::filesystem::path& exe);

}  // namespace inferdesk
