// MappingGuard: keeps the process alive when a file mapped read-only shrinks on disk.
//
// The CPU backend reads weights straight from the mapping of a model file. When another process
// truncates that file (a download or a quantization writing over it, a network drive going away),
// touching a page past the new end raises SIGBUS, which kills the process. A guarded range turns
// that into a flag: on SIGBUS inside the range, the handler maps anonymous zero pages over the
// whole range (MAP_FIXED), so the faulting read and every later one complete and read zeros, and
// marks the range invalidated. Whoever computes from the range checks invalidated() after its
// work (the engine after each step) and fails it with a clear error; the results are garbage.
//
// Reading the pages in at load, or MAP_PRIVATE, does not protect: truncation drops the file's
// pages from every mapping, private ones included (tests/unit/io/test_io_hostile.cpp).
//
// The handler needs a process-wide registry of guarded ranges (a signal handler cannot be given
// context any other way). It is an append-only list of fixed-size slot blocks that the handler
// walks with atomic loads only; registration takes a mutex. Faults outside every guarded range,
// and SIGBUS sent by kill(), go to the handler that was installed before ours (or the default
// action). A guarded range must stay mapped while it is registered: the owner unregisters it
// (destroys the guard) before munmap.
#pragma once

#include <cstddef>
#include <cstdint>

namespace inferdesk {

class MappingGuard {
 public:
  MappingGuard() = default;
  // Guards [begin, begin + size), a mapping of a file as mmap returned it (page-aligned begin).
  // Installs the SIGBUS handler on first use. Throws Error(Io) when the handler cannot be installed.
  static MappingGuard watch(const void* begin, size_t size);

  MappingGuard(const MappingGuard&) = delete;
  MappingGuard& operator=(const MappingGuard&) = delete;
  MappingGuard(MappingGuard&& other) noexcept;
  MappingGuard& operator=(MappingGuard&& other) noexcept;
  ~MappingGuard();

  // True once a read of the range faulted because the file shrank; the range then reads as zeros.
  bool invalidated() const noexcept;
  // Faults turned into zero pages in this process so far: 0 means no guarded range is invalidated,
  // which lets a caller skip looking at each range (one atomic load per engine step).
  static uint64_t faults_handled() noexcept;

  struct Slot;

 private:
  void release() noexcept;
  Slot* slot_ = nullptr;
};

}  // namespace inferdesk
