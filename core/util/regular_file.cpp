#include "core/util/regular_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/error.h"

namespace inferdesk {

const char* file_type_name(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFSOCK: return "a socket";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFLNK: return "a symbolic link";
    default: return "not a file";
  }
}

RegularFile::RegularFile(RegularFile&& o) noexcept : fd_(std::exchange(o.fd_, -1)), size_(o.size_) {}
RegularFile& RegularFile::operator=(RegularFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = o.size_;
  }
  return *this;
}
RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

void require_regular(const std::filesystem::path& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) {
    throw Error(ErrorCode::Format, path.string() + ": not a regular file (" + file_type_name(st.st_mode) + ")");
  }
}

}  // namespace

RegularFile RegularFile::open(const std::filesystem::path& path) {
  // stat first, so that a device is not even opened (opening some has side effects); then the
  // type again on the descriptor, since the name may have been swapped in between. O_NONBLOCK:
  // opening a FIFO for reading would otherwise wait for a writer, forever.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) require_regular(path, st);
  RegularFile f;
  f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (f.fd_ < 0) {
    const int err = errno;
    throw Error(err == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                path.string() + ": cannot open: " + std::strerror(err));
  }
  if (::fstat(f.fd_, &st) != 0) throw Error(ErrorCode::Io, path.string() + ": cannot stat: " + std::strerror(errno));
  require_regular(path, st);
  // Reads of a regular file ignore O_NONBLOCK today; cleared so that no reader ever sees EAGAIN.
  const int flags = ::fcntl(f.fd_, F_GETFL);
  if (flags < 0 || ::fcntl(f.fd_, F_SETFL, flags & ~O_NONBLOCK) != 0)
    throw Error(ErrorCode::Io, path.string() + ": cannot set blocking mode: " + std::strerror(errno));
  f.size_ = static_cast<uint64_t>(st.st_size);
  return f;
}

std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes) {
  RegularFile f = RegularFile::open(path);
  if (f.size() > max_bytes) {
    throw Error(ErrorCode::Format, path.string() + ": file is " + std::to_string(f.size()) +
                                       " bytes, larger than the limit of " + std::to_string(max_bytes) +
                                       " bytes for this kind of file");
  }
  std::string text(static_cast<size_t>(f.size()), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(f.fd(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(ErrorCode::Io, path.string() + ": cannot read: " + std::strerror(errno));
    if (n == 0) throw Error(ErrorCode::Io, path.string() + ": short read (file changed while reading?)");
    done += static_cast<size_t>(n);
  }
  return text;
}

}  // namespace inferdesk
