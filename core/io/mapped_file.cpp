#include "core/io/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <sys/mman.h>

#include "core/util/error.h"
#include "core/util/regular_file.h"

namespace inferdesk {

MappedFile MappedFile::open(const std::filesystem::path& path) {
  const RegularFile file = RegularFile::open(path);  // refuses a FIFO without blocking on it
  MappedFile out;
  out.path_ = path;
  out.size_ = static_cast<size_t>(file.size());
  if (out.size_ == 0) return out;  // mmap of length 0 is invalid; an empty file maps to nothing
  void* p = ::mmap(nullptr, out.size_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    out.size_ = 0;
    throw Error(ErrorCode::Io,
                path.string() + ": cannot mmap " + std::to_string(file.size()) + " bytes: " + std::strerror(err));
  }
  out.data_ = static_cast<const std::byte*>(p);
  out.guard_ = MappingGuard::watch(p, out.size_);
  return out;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      guard_(std::move(other.guard_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    guard_ = std::move(other.guard_);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() noexcept {
  guard_ = MappingGuard();  // unguard before unmapping: the range may be reused by the next mmap
  if (data_ != nullptr) {
    ::munmap(const_cast<std::byte*>(data_), size_);
  }
  data_ = nullptr;
  size_ = 0;
}

Error MappedFile::changed_on_disk_error() const {
  // SIGBUS also means a read error (a network drive gone): the message covers both.
  return Error(ErrorCode::Io, path_.string() +
                                  ": the model file changed on disk while loaded, or could no longer be read (it "
                                  "was truncated or overwritten, or its drive went away); what was computed from it "
                                  "since is invalid. Load the model again.");
}

}  // namespace inferdesk
