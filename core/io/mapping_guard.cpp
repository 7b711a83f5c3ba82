#include "core/io/mapping_guard.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include <sys/mman.h>

#include "core/util/error.h"

namespace inferdesk {

// One guarded range. `begin` != 0 means registered; the handler reads begin, then end.
struct MappingGuard::Slot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> invalidated{false};
  bool used = false;  // guarded by the registry mutex, never read by the handler
};

namespace {

static_assert(std::atomic<uintptr_t>::is_always_lock_free && std::atomic<bool>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "the SIGBUS handler may only use lock-free atomics");

constexpr size_t kSlotsPerBlock = 256;

struct Block {
  MappingGuard::Slot slots[kSlotsPerBlock];
  std::atomic<Block*> next{nullptr};
};

// The registry the signal handler reads (see the header: a handler has no other way to get
// context). Blocks are never freed, so the handler never sees freed memory.
struct Registry {
  std::atomic<Block*> head{nullptr};
  std::atomic<uint64_t> faults{0};
  std::mutex mutex;  // registration and release only
  struct sigaction previous {};
  std::once_flag installed;
  int install_errno = 0;
};

Registry& registry() {
  static Registry* r = new Registry;  // leaked on purpose: the handler may run during exit
  return *r;
}

// Hands the signal to whoever had SIGBUS before us, as if we were not there.
void chain(int sig, siginfo_t* info, void* ctx) {
  const struct sigaction& prev = registry().previous;
  const bool from_kill = info == nullptr || info->si_code <= 0;
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, ctx);
    return;
  }
  if (prev.sa_handler == SIG_IGN && from_kill) return;
  if (prev.sa_handler == SIG_DFL || prev.sa_handler == SIG_IGN) {
    // Default action: for a fault, returning re-runs the access, which faults again and kills.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    if (from_kill) ::raise(sig);  // delivered once the handler returns (SIGBUS is blocked here)
    return;
  }
  prev.sa_handler(sig);
}

// Async-signal-safe: atomic loads and stores, mmap (a plain system call on Linux), errno saved.
void on_sigbus(int sig, siginfo_t* info, void* ctx) {
  const int saved_errno = errno;
  if (info != nullptr && info->si_code > 0) {
    const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
    Registry& r = registry();
    for (Block* b = r.head.load(std::memory_order_acquire); b != nullptr; b = b->next.load(std::memory_order_acquire)) {
      for (MappingGuard::Slot& s : b->slots) {
        const uintptr_t begin = s.begin.load(std::memory_order_acquire);
        if (begin == 0 || addr < begin || addr >= s.end.load(std::memory_order_acquire)) continue;
        const size_t len = s.end.load(std::memory_order_acquire) - begin;
        void* p = ::mmap(reinterpret_cast<void*>(begin), len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                         0);
        if (p == MAP_FAILED) break;  // cannot repair: let the previous handler (or the default) act
        s.invalidated.store(true, std::memory_order_release);
        r.faults.fetch_add(1, std::memory_order_acq_rel);
        errno = saved_errno;
        return;
      }
    }
  }
  errno = saved_errno;
  chain(sig, info, ctx);
}

void install_handler(Registry& r) {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGBUS, &sa, &r.previous) != 0) r.install_errno = errno;
}

MappingGuard::Slot* take_slot(Registry& r) {
  std::lock_guard lock(r.mutex);
  Block* last = nullptr;
  for (Block* b = r.head.load(std::memory_order_acquire); b != nullptr; b = b->next.load(std::memory_order_acquire)) {
    for (MappingGuard::Slot& s : b->slots) {
      if (!s.used) {
        s.used = true;
        return &s;
      }
    }
    last = b;
  }
  auto* fresh = new Block;  // never freed (see Registry)
  fresh->slots[0].used = true;
  (last ? last->next : r.head).store(fresh, std::memory_order_release);
  return &fresh->slots[0];
}

}  // namespace

MappingGuard MappingGuard::watch(const void* begin, size_t size) {
  MappingGuard g;
  if (begin == nullptr || size == 0) return g;  // nothing mapped, nothing to guard
  Registry& r = registry();
  std::call_once(r.installed, [&] { install_handler(r); });
  if (r.install_errno != 0) {
    throw Error(ErrorCode::Io, std::string("cannot install the SIGBUS handler that guards mapped model files: ") +
                                   std::strerror(r.install_errno));
  }
  g.slot_ = take_slot(r);
  g.slot_->invalidated.store(false, std::memory_order_relaxed);
  g.slot_->end.store(reinterpret_cast<uintptr_t>(begin) + size, std::memory_order_release);
  g.slot_->begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
  return g;
}

MappingGuard::MappingGuard(MappingGuard&& other) noexcept : slot_(std::exchange(other.slot_, nullptr)) {}

MappingGuard& MappingGuard::operator=(MappingGuard&& other) noexcept {
  if (this != &other) {
    release();
    slot_ = std::exchange(other.slot_, nullptr);
  }
  return *this;
}

MappingGuard::~MappingGuard() { release(); }

void MappingGuard::release() noexcept {
  if (slot_ == nullptr) return;
  slot_->begin.store(0, std::memory_order_release);
  slot_->end.store(0, std::memory_order_release);
  std::lock_guard lock(registry().mutex);
  slot_->used = false;
  slot_ = nullptr;
}

bool MappingGuard::invalidated() const noexcept {
  return slot_ != nullptr && slot_->invalidated.load(std::memory_order_acquire);
}

uint64_t MappingGuard::faults_handled() noexcept { return registry().faults.load(std::memory_order_acquire); }

}  // namespace inferdesk
