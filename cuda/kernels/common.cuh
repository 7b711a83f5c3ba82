// Small helpers shared by the kernel files (device code only; not part of the public contract).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/util/error.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

// Throws Error(Internal) naming `what` when the last launch failed.
void check_launch(const char* what);
// Same for a launch whose status is `launched` (also clears the sticky last-error slot).
void check_launch(const char* what, cudaError_t launched);
[[noreturn]] void unsupported_config(const std::string& what);

// Raises the dynamic shared-memory limit of `Kernel` to `bytes` once per device and process (not
// inside the launch path of every call, so launches stay cheap and capturable). The kernel is a
// template argument so that every kernel has its own record: the instantiations of one kernel
// template for different head dims share a function type, and a record keyed by that type let the
// first instantiation's call (D 128) mark the others (D 256) as done, leaving their launches to
// fail with "invalid argument".
// static_bytes: an upper bound of the kernel's static shared memory (the 48 KB without the
// attribute cover static and dynamic together).
template <auto Kernel>
void allow_dynamic_smem(size_t bytes, const char* who, size_t static_bytes = 0) {
  if (bytes + static_bytes <= 48 * 1024) return;
  static std::mutex mu;
  static uint64_t done_mask = 0;  // bit d: done on device d (devices >= 64 redo it every call)
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) dev = 0;
  const uint64_t bit = dev >= 0 && dev < 64 ? (uint64_t{1} << dev) : 0;
  std::lock_guard<std::mutex> lock(mu);
  if (bit != 0 && (done_mask & bit) != 0) return;
  const cudaError_t e = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(bytes));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(ErrorCode::Internal, std::string(who) + ": cannot allow " + std::to_string(bytes) +
                                         " bytes of shared memory: " + cudaGetErrorString(e));
  }
  done_mask |= bit;
}

// Answers probe(device) for the current device, once per device and process (false when the
// current device cannot be read). For capability checks behind launchers (PDL, sm_90a kernels).
constexpr int kMaxDevices = 64;
bool once_per_device(std::array<std::atomic<int8_t>, kMaxDevices>& cache, bool (*probe)(int device));

// Shared-memory address of a generic pointer into shared memory (for PTX operands).
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// cp.async groups: close the copies issued so far into a group; wait until at most N are pending.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Sum over a warp (all 32 lanes active).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// ------------------------------------------------ programmatic dependent launch (PDL, sm_90+)
// A kernel launched by launch_kernel with PDL on may start while its predecessor on the stream is
// still running. Every block must call pdl_wait() before it reads anything an earlier kernel may
// have written, before its first global write and before any early return; only immutable data
// (weights, norm weights, inv_freq) and the step's metadata (positions, slots, lengths, block
// tables: uploaded by a copy the compute stream waits for, by stream order or an event, before the
// step's first kernel, which no later kernel can overtake; written by no kernel) may be read
// before it. griddepcontrol.wait returns once every
// prerequisite grid has completed and its memory is visible. Below sm_90 both are no-ops (and
// launch_kernel never sets the attribute there), so plain stream order applies.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Lets the next kernel on the stream be scheduled (its blocks run up to their pdl_wait()) as soon
// as every block of this grid has called this or exited. Safe to call at any point: it does not
// make this grid's writes visible early (the dependent's pdl_wait() still waits for completion).
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// Launches `kernel` on launch.stream through cudaLaunchKernelEx, in clusters of `cluster` blocks
// along x when cluster > 1 (thread-block clusters, sm_90), with the attribute
// cudaLaunchAttributeProgrammaticStreamSerialization = 1 when uses_pdl(launch) (launch.h), a plain
// stream-ordered launch otherwise; throws Error(Internal) naming `what` on a launch error.
// Arguments are converted to the kernel's parameter types.
template <typename... KArgs, typename... Args>
void launch_kernel_clustered(const char* what, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                             unsigned cluster, const Launch& launch, Args... args) {
  static_assert(sizeof...(KArgs) == sizeof...(Args), "launch_kernel: wrong number of kernel arguments");
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = launch.stream;
  cudaLaunchAttribute attr[2];
  unsigned na = 0;
  if (cluster > 1) {
    attr[na].id = cudaLaunchAttributeClusterDimension;
    attr[na].val.clusterDim.x = cluster;
    attr[na].val.clusterDim.y = 1;
    attr[na].val.clusterDim.z = 1;
    ++na;
  }
  if (uses_pdl(launch)) {
    attr[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[na].val.programmaticStreamSerializationAllowed = 1;
    ++na;
  }
  cfg.attrs = na ? attr : nullptr;
  cfg.numAttrs = na;
  check_launch(what, cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...));
}

// launch_kernel_clustered without clusters.
template <typename... KArgs, typename... Args>
void launch_kernel(const char* what, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, const Launch& launch,
                   Args... args) {
  launch_kernel_clustered(what, kernel, grid, block, smem, 1, launch, args...);
}

}  // namespace inferdesk::cuda
