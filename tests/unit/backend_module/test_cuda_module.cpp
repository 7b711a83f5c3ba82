// CudaModule: finding, opening and refusing libinferdesk-cuda.so, with the fake modules of this
// folder's CMakeLists.txt and, where it was built, the real one.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cuda_module.h"
#include "core/engine/generate.h"
#include "core/engine/model_loader.h"
#include "core/util/error.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

const std::filesystem::path kFakes = FAKE_MODULE_DIR;

TEST(CudaModule, AbsentModuleSaysWhichPackageToInstall) {
  const CudaModule m = CudaModule::load({kFakes / "nowhere", kFakes / "nor-here"});
  EXPECT_FALSE(m.usable());
  EXPECT_FALSE(m.api_loaded());
  EXPECT_TRUE(m.path().empty());
  EXPECT_NE(m.reason().find("the CUDA backend is not installed"), std::string::npos) << m.reason();
  EXPECT_NE(m.reason().find("nor-here"), std::string::npos) << m.reason();
  EXPECT_NE(m.reason().find("install the inferdesk-cuda package"), std::string::npos);
  try {
    m.create({});
    FAIL() << "created a backend from a missing module";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("CUDA is not available"), std::string::npos);
  }
}

TEST(CudaModule, FirstFolderThatHasTheModuleWins) {
  const CudaModule m = CudaModule::load(
      {kFakes / "nowhere", kFakes / "fake_module_ok", kFakes / "fake_module_other_build"});
  ASSERT_TRUE(m.usable()) << m.reason();
  EXPECT_EQ(m.path(), kFakes / "fake_module_ok" / kCudaModuleFileName);
  EXPECT_EQ(m.architectures(), "sm_90 (fake)");
  ASSERT_EQ(m.devices().size(), 1u);
  EXPECT_EQ(m.devices()[0].name, "Fake GPU");
}

TEST(CudaModule, ModuleWhoseLibrariesAreMissingNamesTheLibrary) {
  const CudaModule m = CudaModule::load({kFakes / "fake_module_missing_lib"});
  EXPECT_FALSE(m.usable());
  EXPECT_FALSE(m.api_loaded());
  EXPECT_EQ(m.reason(), "libinferdesk_test_vanished.so not found: install the inferdesk-cuda package (it "
                        "brings the CUDA libraries the CUDA backend needs)");
}

TEST(CudaModule, ModuleOfAnotherBuildIsRefused) {
  const CudaModule m = CudaModule::load({kFakes / "fake_module_other_build"});
  EXPECT_FALSE(m.usable());
  EXPECT_FALSE(m.api_loaded());
  EXPECT_NE(m.reason().find("belongs to another build of InferDesk (module 0.0-fake"), std::string::npos) << m.reason();
}

TEST(CudaModule, LoadErrorsBecomeSentences) {
  EXPECT_EQ(describe_module_load_error("/usr/lib/inferdesk/libinferdesk-cuda.so: libcublasLt.so.13: "
                                       "cannot open shared object file: No such file or directory"),
            "libcublasLt.so.13 not found: install the inferdesk-cuda package (it brings the CUDA "
            "libraries the CUDA backend needs)");
  EXPECT_EQ(describe_module_load_error("/x/libinferdesk-cuda.so: undefined symbol: cublasLtCreate"),
            "cannot open the CUDA backend module: /x/libinferdesk-cuda.so: undefined symbol: "
            "cublasLtCreate");
}

// A backend made inside the module is used and destroyed by the program, and generates exactly
// what one made here does; a typed error raised inside reaches the caller with its code.
TEST(CudaModule, BackendFromTheModuleRunsTheEngine) {
  const CudaModule m = CudaModule::load({kFakes / "fake_module_ok"});
  ASSERT_TRUE(m.usable()) << m.reason();
  CudaBackendOptions failing;
  failing.device = -1;
  try {
    m.create(failing);
    FAIL() << "the module's error was lost";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory);
    EXPECT_STREQ(e.what(), "fake: no memory");
  }
  const auto dir = test::golden_models_dir() / "tiny-chat";
  auto run = [&](std::unique_ptr<Backend> b) {
    Engine engine(load_model_folder(dir, std::move(b)), EngineOptions{});
    Request r;
    r.prompt_ids = {1, 2, 3, 4, 5};
    r.params.max_tokens = 12;
    r.params.temperature = 0;
    r.params.ignore_eos = true;
    return generate_all(engine, {r}).at(0).token_ids();
  };
  const auto via_module = run(m.create({}));
  EXPECT_EQ(via_module.size(), 12u);
  EXPECT_EQ(via_module, run(make_cpu_backend(1)));
}

// The real module, where this build has one: it opens, and on a machine without the NVIDIA
// driver it says so instead of the runtime's "driver version is insufficient".
TEST(CudaModule, RealModuleOpensAndExplainsAMissingDriver) {
  const std::string dir = REAL_MODULE_DIR;
  if (dir.empty()) GTEST_SKIP() << "this build has no CUDA backend module (nvcc not found)";
  const CudaModule m = CudaModule::load({dir});
  ASSERT_TRUE(m.api_loaded()) << m.reason();
  EXPECT_NE(m.architectures().find("sm_"), std::string::npos) << m.architectures();
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) {
    EXPECT_FALSE(m.usable());
    EXPECT_EQ(m.reason(), "no NVIDIA driver found (libcuda.so.1 is not installed)");
  } else {
    dlclose(driver);
    if (m.usable())
      EXPECT_FALSE(m.devices().empty());
    else
      EXPECT_FALSE(m.reason().empty());
  }
}

}  // namespace
}  // namespace inferdesk
