// A model folder broken on purpose: a copy of a golden fixture (tests/golden/models/<name>) in a
// fresh directory under the build tree, whose config.json, generation_config.json and
// model.safetensors a test rewrites (a key changed, a tensor dropped, renamed, re-shaped, re-typed,
// or its bytes poisoned). Removed when the object goes.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/safetensors.h"
#include "core/io/safetensors_writer.h"
#include "tests/support/golden.h"

namespace inferdesk::test {

class HostileFolder {
 public:
  // One tensor of model.safetensors as edit_tensors hands it over; `bytes` must match dtype and
  // shape when written back (safetensors checks it on open).
  struct Tensor {
    std::string name;
    std::string dtype;  // "BF16", "F32", "U8", ...
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };

  explicit HostileFolder(const std::string& fixture) {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::path(INFERDESK_BINARY_DIR) /
           ("hostile_" + fixture + "_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(dir_);
    std::filesystem::copy(golden_models_dir() / fixture, dir_, std::filesystem::copy_options::recursive);
    std::filesystem::remove(dir_ / "expected.json");
  }
  ~HostileFolder() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  HostileFolder(const HostileFolder&) = delete;
  HostileFolder& operator=(const HostileFolder&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::string path() const { return dir_.string(); }

  void edit_json(const std::string& file, const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::object();
    if (std::ifstream in(dir_ / file); in) j = nlohmann::json::parse(in);
    edit(j);
    std::ofstream(dir_ / file) << j.dump(2);
  }
  void edit_config(const std::function<void(nlohmann::json&)>& edit) { edit_json("config.json", edit); }
  void write_file(const std::string& file, const std::string& text) { std::ofstream(dir_ / file) << text; }

  // Rewrites model.safetensors with every tensor passed through `edit`; returning false drops it.
  void edit_tensors(const std::function<bool(Tensor&)>& edit) {
    std::vector<Tensor> tensors;
    {
      const SafetensorsFile f = SafetensorsFile::open(dir_ / "model.safetensors");
      for (const HostTensor& t : f.tensors()) {
        Tensor x{t.name, dtype_name(t.dtype), t.shape, {}};
        x.bytes.resize(t.nbytes);
        if (t.nbytes) std::memcpy(x.bytes.data(), t.data, t.nbytes);
        if (edit(x)) tensors.push_back(std::move(x));
      }
    }
    std::vector<SafetensorsOut> out;
    for (Tensor& t : tensors)
      out.push_back({t.name, t.dtype, t.shape, static_cast<int64_t>(t.bytes.size()), [&t] { return t.bytes; }});
    write_safetensors(dir_ / "model.safetensors.new", out);
    std::filesystem::rename(dir_ / "model.safetensors.new", dir_ / "model.safetensors");
  }
  // Edits the one tensor called `name` (the others are kept as they are).
  void edit_tensor(const std::string& name, const std::function<bool(Tensor&)>& edit) {
    edit_tensors([&](Tensor& t) { return t.name != name || edit(t); });
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace inferdesk::test
