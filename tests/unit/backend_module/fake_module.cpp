// A stand-in for libinferdesk-cuda.so that runs anywhere: its "GPU" is the CPU backend. Built
// like the real module (hidden symbols, static libraries inside) so the tests exercise the same
// dlopen boundary: the entry point, the ABI check, backends created on one side and used and
// destroyed on the other, typed errors crossing it.
#include <exception>
#include <string>
#include <vector>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cuda_module_abi.h"
#include "core/util/error.h"

#ifdef FAKE_MODULE_NEEDS_VANISHED_LIBRARY
extern "C" int inferdesk_test_vanished_symbol();
#endif

namespace {

bool probe(std::string* reason, std::vector<inferdesk::GpuDeviceInfo>* devices) {
#ifdef FAKE_MODULE_NEEDS_VANISHED_LIBRARY
  if (inferdesk_test_vanished_symbol() != 1) return false;
#endif
  inferdesk::GpuDeviceInfo d;
  d.name = "Fake GPU";
  d.total_memory = 1LL << 30;
  d.free_memory = 1LL << 29;
  d.compute_major = 9;
  devices->push_back(d);
  return true;
}

// device < 0 asks for a failure, to check that its code and message reach the caller.
inferdesk::Backend* create(const inferdesk::CudaBackendOptions* o, std::string* error, int* code) {
  try {
    if (o->device < 0) throw inferdesk::Error(inferdesk::ErrorCode::OutOfMemory, "fake: no memory");
    return inferdesk::make_cpu_backend(1).release();
  } catch (const inferdesk::Error& e) {
    *error = e.what();
    *code = static_cast<int>(e.code());
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return nullptr;
}

const inferdesk::CudaModuleApi kApi{FAKE_MODULE_ABI, "0.0-fake", "sm_90 (fake)", probe, create};

}  // namespace

extern "C" __attribute__((visibility("default"))) const inferdesk::CudaModuleApi* inferdesk_cuda_module_api() {
  return &kApi;
}
