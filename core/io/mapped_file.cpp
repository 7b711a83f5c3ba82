#include "core/io/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/error.h"

namespace inferdesk {
namespace {

// Closes the descriptor on every path out of open().
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

MappedFile MappedFile::open(const std::filesystem::path& path) {
  FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) {
    int err = errno;
    ErrorCode code = err == ENOENT ? ErrorCode::NotFound : ErrorCode::Io;
    throw Error(code, path.string() + ": cannot open: " + errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) {
    throw Error(ErrorCode::Io, path.string() + ": cannot stat: " + errno_text(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(ErrorCode::Format, path.string() + ": not a regular file");
  }
  MappedFile out;
  out.path_ = path;
  out.size_ = static_cast<size_t>(st.st_size);
  if (out.size_ == 0) return out;  // mmap of length 0 is invalid; an empty file maps to nothing
  void* p = ::mmap(nullptr, out.size_, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) {
    throw Error(ErrorCode::Io,
                path.string() + ": cannot mmap " + std::to_string(out.size_) + " bytes: " + errno_text(errno));
  }
  out.data_ = static_cast<const std::byte*>(p);
  return out;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() noexcept {
  if (data_ != nullptr) {
    ::munmap(const_cast<std::byte*>(data_), size_);
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace inferdesk
