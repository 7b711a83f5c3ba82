// install_layout: a program finds its resources and modules relative to its own executable, as
// installed (<prefix>/bin beside <prefix>/share/inferdesk and <prefix>/lib/inferdesk), through a
// symlink to it, and in the build tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include <filesystem>
#include <fstream>

#include "core/engine/model_loader.h"
#include "core/util/install_layout.h"

namespace inferdesk {
namespace {

namespace fs = std::filesystem;

struct FakePrefix : ::testing::Test {
  fs::path root;
  void SetUp() override {
    root = fs::temp_directory_path() / ("inferdesk-layout-" + std::to_string(getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "opt/inferdesk/bin");
    fs::create_directories(root / "opt/inferdesk/share/inferdesk/shapes");
    fs::create_directories(root / "opt/inferdesk/lib/inferdesk");
    fs::create_directories(root / "usr/local/bin");
    std::ofstream(root / "opt/inferdesk/bin/inferdesk-cli") << "#!/bin/true\n";
  }
  void TearDown() override { fs::remove_all(root); }
};

TEST_F(FakePrefix, ResourcesAndModulesBesideTheExecutable) {
  const fs::path exe = root / "opt/inferdesk/bin/inferdesk-cli";
  EXPECT_EQ(resources_dir(exe), root / "opt/inferdesk/share/inferdesk");
  EXPECT_EQ(default_shapes_dir(exe), root / "opt/inferdesk/share/inferdesk/shapes");
  ASSERT_FALSE(module_dirs(exe).empty());
  EXPECT_EQ(module_dirs(exe).front(), root / "opt/inferdesk/lib/inferdesk");
}

TEST_F(FakePrefix, ASymlinkToTheExecutableLeadsToItsPrefix) {
  const fs::path link = root / "usr/local/bin/inferdesk-cli";
  fs::create_symlink(root / "opt/inferdesk/bin/inferdesk-cli", link);
  EXPECT_EQ(resources_dir(link), root / "opt/inferdesk/share/inferdesk");
  EXPECT_EQ(module_dirs(link).front(), root / "opt/inferdesk/lib/inferdesk");
}

TEST_F(FakePrefix, WithoutInstalledResourcesTheSourceTreeIsTheLastResort) {
  fs::remove_all(root / "opt/inferdesk/share");
  const fs::path got = resources_dir(root / "opt/inferdesk/bin/inferdesk-cli");
  EXPECT_EQ(got, fs::path(INFERDESK_SOURCE_DIR) / "resources");
  EXPECT_TRUE(fs::is_regular_file(got / "shapes/llama-3.2-1b.json"));
}

TEST(InstallLayout, ThisTestFindsItsOwnExecutable) {
  const fs::path exe = executable_path();
  EXPECT_TRUE(exe.is_absolute());
  EXPECT_EQ(exe.filename(), "test_backend_module");
  // The build tree's programs sit two or three levels below it; the module folder list covers both.
  const auto dirs = module_dirs(fs::path(INFERDESK_BINARY_DIR) / "apps/cli/inferdesk-cli");
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), fs::path(INFERDESK_BINARY_DIR) / "lib/inferdesk"), dirs.end());
  const auto gui = module_dirs(fs::path(INFERDESK_BINARY_DIR) / "gui/inferdesk");
  EXPECT_EQ(gui.front(), fs::path(INFERDESK_BINARY_DIR) / "lib/inferdesk");
}

}  // namespace
}  // namespace inferdesk
