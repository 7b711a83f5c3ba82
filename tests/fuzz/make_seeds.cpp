// fuzz_make_seeds SOURCE_DIR SHARED_DIR OUT_DIR: writes OUT_DIR/<target>/ seed corpora from the
// checkout's tests/golden and the shared data (tokenizers/, chat-templates/), in each target's
// input format (tests/fuzz/README.md). scripts/fuzz.sh runs it before fuzzing.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/make_seeds.h"

namespace inferdesk::fuzz {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::ordered_json;

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

uint64_t read_le64(const std::string& s) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

std::vector<fs::path> files_under(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (it->is_regular_file() && n.size() >= suffix.size() &&
        n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A seed name from a path below `root`: "models/llama/config.json" -> "models_llama_config.json".
std::string flat_name(const fs::path& file, const fs::path& root) {
  std::string s = fs::relative(file, root).string();
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

size_t dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {{"F64", 8}, {"I64", 8}, {"U64", 8},  {"F32", 4}, {"I32", 4},
                                                      {"U32", 4}, {"F16", 2}, {"BF16", 2}, {"I16", 2}, {"U16", 2}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 1 : it->second;
}

// A safetensors file with the same tensors (names, dtypes, ranks) but every dimension cut to at
// most 2 and the data zero: ModelFolder checks structure, not sizes, so the seed stays small.
std::string shrink_safetensors(const std::string& file) {
  if (file.size() < 8) return {};
  const uint64_t n = read_le64(file);
  if (n > file.size() - 8) return {};
  Json header = Json::parse(file.substr(8, n));
  uint64_t offset = 0;
  for (auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    uint64_t bytes = dtype_bytes(t["dtype"].get<std::string>());
    for (auto& d : t["shape"]) {
      d = std::min<int64_t>(d.get<int64_t>(), 2);
      bytes *= d.get<uint64_t>();
    }
    t["data_offsets"] = {offset, offset + bytes};
    offset += bytes;
  }
  const std::string text = header.dump();
  return le64(text.size()) + text + std::string(offset, '\0');
}

void safetensors_seeds(const fs::path& golden, const fs::path& out) {
  for (const fs::path& f : files_under(golden, ".safetensors")) {
    const std::string bytes = read_file(f);
    if (bytes.size() < 8) continue;
    const uint64_t n = read_le64(bytes);
    if (n > bytes.size() - 8) continue;
    write_seed(out, "safetensors_header", flat_name(f, golden), le64(bytes.size() - 8 - n) + bytes.substr(8, n));
  }
}

void model_folder_seeds(const fs::path& golden, const fs::path& out) {
  for (const fs::path& config : files_under(golden, "config.json")) {
    if (config.filename() != "config.json") continue;
    const fs::path dir = config.parent_path();
    std::string seed = read_file(config);
    for (const char* name : {"generation_config.json", "model.safetensors.index.json"}) {
      const std::string text = read_file(dir / name);
      if (!text.empty()) seed += std::string("\n%%FILE ") + name + "\n" + text;
    }
    for (const fs::path& shard : files_under(dir, ".safetensors")) {
      if (shard.parent_path() != dir) continue;
      seed += "\n%%FILE " + shard.filename().string() + "\n" + shrink_safetensors(read_file(shard));
    }
    write_seed(out, "model_folder", flat_name(dir, golden), seed);
  }
}

// config.json-like files: model_config takes every one, quant_config those with a
// quantization_config.
void config_seeds(const fs::path& golden, const fs::path& shared, const fs::path& out) {
  for (const fs::path& root : {golden, shared / "tokenizers"}) {
    for (const fs::path& f : files_under(root, ".json")) {
      const std::string n = f.filename().string();
      if (n.rfind("config", 0) != 0 && n != "generation_config.json") continue;
      const std::string text = read_file(f);
      if (text.size() > 65536) continue;
      write_seed(out, "model_config", flat_name(f, root), text);
      if (text.find("quantization_config") != std::string::npos)
        write_seed(out, "quant_config", flat_name(f, root), text);
    }
  }
}

}  // namespace

void write_seed(const fs::path& out, const std::string& target, const std::string& name, const std::string& bytes) {
  if (bytes.empty()) return;
  fs::create_directories(out / target);
  std::ofstream(out / target / name, std::ios::binary) << bytes;
}

}  // namespace inferdesk::fuzz

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: fuzz_make_seeds SOURCE_DIR SHARED_DIR OUT_DIR\n");
    return 2;
  }
  using namespace inferdesk::fuzz;
  const fs::path source = argv[1], shared = argv[2], out = argv[3];
  const fs::path golden = source / "tests" / "golden";
  safetensors_seeds(golden, out);
  model_folder_seeds(golden, out);
  config_seeds(golden, shared, out);
  make_tokenizer_seeds(shared, out);
  make_chat_and_text_seeds(source, shared, out);
  std::error_code ec;
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const auto n = std::distance(fs::directory_iterator(it->path()), fs::directory_iterator());
    std::printf("seeds: %-20s %ld\n", it->path().filename().c_str(), static_cast<long>(n));
  }
  return 0;
}
