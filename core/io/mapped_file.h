// MappedFile: a whole file mapped read-only into memory (RAII, move-only).
//
// The mapping stays valid while the object lives; moving the object keeps the address, so
// pointers into data() survive a move. If another process truncates the file while it is mapped,
// reading the lost pages would raise SIGBUS and kill the process: the mapping is guarded
// (mapping_guard.h), so those reads return zeros instead and invalidated() becomes true. Whoever
// computes from data() checks invalidated() afterwards and throws changed_on_disk_error().
#pragma once

#include <cstddef>
#include <filesystem>

#include "core/io/mapping_guard.h"
#include "core/util/error.h"

namespace inferdesk {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path` read-only. Throws Error: NotFound when the file does not exist, Io when it cannot
  // be opened, stat'ed or mapped, Format when it is not a regular file ("not a regular file (a
  // FIFO)": checked without blocking, core/util/regular_file.h).
  static MappedFile open(const std::filesystem::path& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  ~MappedFile();

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  // True once the file shrank under the mapping and a read of a lost page returned zeros.
  bool invalidated() const noexcept { return guard_.invalidated(); }
  // Error(Io) "<path>: the model file changed on disk while loaded ...".
  Error changed_on_disk_error() const;

 private:
  void reset() noexcept;

  std::filesystem::path path_;
  const std::byte* data_ = nullptr;  // nullptr for an empty file
  size_t size_ = 0;
  MappingGuard guard_;
};

}  // namespace inferdesk
