// A whole model folder through ModelFolder::open: config.json, generation_config.json, the shard
// index and the safetensors files, with the cross-file checks (index against shards, shard names
// against the folder). ModelFolder reads only paths, so the files are written into the process's
// scratch folder (emptied for every input). Input: the multi-file format of fuzz_support.h; text
// before the first "%%FILE" line is config.json.
#include <cstdint>
#include <string_view>

#include "core/io/model_folder.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferdesk;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto& dir = fuzz::ScratchDir::get();
  dir.clear();
  for (const fuzz::Part& p : fuzz::split_parts(input, "config.json")) dir.write(p.name, p.content);
  fuzz::expect_typed_errors([&] {
    const ModelFolder folder = ModelFolder::open(dir.path());
    // What the loader and `info` do next with an accepted folder.
    (void)folder.weight_bytes();
    for (const auto& name : folder.tensor_names()) {
      const HostTensor* t = folder.find(name);
      if (t == nullptr) __builtin_trap();  // a listed name must be found
      (void)folder.file_of(name);
    }
  });
  return 0;
}
