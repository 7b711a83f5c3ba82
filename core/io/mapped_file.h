// MappedFile: a whole file mapped read-only into memory (RAII, move-only).
//
// The mapping stays valid while the object lives; moving the object keeps the address, so
// pointers into data() survive a move. If another process truncates the file while it is mapped,
// reading the lost pages raises SIGBUS: that is the usual mmap contract and cannot be checked here.
#pragma once

#include <cstddef>
#include <filesystem>

namespace inferdesk {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path` read-only. Throws Error: NotFound when the file does not exist, Io when it cannot
  // be opened, stat'ed or mapped, Format when it is not a regular file.
  static MappedFile open(const std::filesystem::path& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  ~MappedFile();

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void reset() noexcept;

  std::filesystem::path path_;
  const std::byte* data_ = nullptr;  // nullptr for an empty file
  size_t size_ = 0;
};

}  // namespace inferdesk
