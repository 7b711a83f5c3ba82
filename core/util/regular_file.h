// Opening a file of a model folder (untrusted: any name may be a FIFO, a device or a directory)
// without blocking, and refusing anything but a regular file with a message saying what it is.
// Every reader of a model-folder path goes through here: open(O_RDONLY) on a FIFO waits for a
// writer forever, and a stat() before the open leaves a window in which the file can be swapped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace inferdesk {

// "a FIFO", "a directory", "a character device", ... for st_mode `mode`.
const char* file_type_name(unsigned mode);

// An open, read-only descriptor of a regular file (RAII, move-only).
class RegularFile {
 public:
  // Opens with O_NONBLOCK, checks the type with fstat on that descriptor, then clears O_NONBLOCK.
  // Throws Error: NotFound (missing), Io (cannot open or stat), Format ("<path>: not a regular
  // file (a FIFO)").
  static RegularFile open(const std::filesystem::path& path);

  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  ~RegularFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }  // at open time

 private:
  RegularFile() = default;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Reads a whole regular file, refusing files larger than `max_bytes`. Throws Error as
// RegularFile::open does, Format when larger than max_bytes, Io on a read error or short read.
std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes);

}  // namespace inferdesk
