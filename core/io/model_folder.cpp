#include "core/io/model_folder.h"

#include <algorithm>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "core/io/json_util.h"
#include "core/io/mapping_guard.h"
#include "core/util/error.h"
#include "core/util/json_guard.h"

namespace inferdesk {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxShards = 10000;

// Re-throws an error from a JSON-level parser with the file it came from in front.
template <typename F>
auto with_file_context(const fs::path& file, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e.code(), file.string() + ": " + e.what());
  }
}

bool is_within(const fs::path& p, const fs::path& root) {
  auto [root_end, p_it] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  return root_end == root.end();
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Folders a weight file may resolve into: the model folder itself and, for a Hugging Face cache
// snapshot (<repo>/snapshots/<rev>/, whose files are symlinks to <repo>/blobs/), that blobs folder.
std::vector<fs::path> allowed_roots(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> roots{fs::weakly_canonical(dir, ec)};
  fs::path abs = fs::absolute(dir, ec).lexically_normal();
  if (abs.has_relative_path() && abs.filename().empty()) abs = abs.parent_path();
  if (abs.parent_path().filename() == "snapshots") {
    roots.push_back(fs::weakly_canonical(abs.parent_path().parent_path() / "blobs", ec));
  }
  return roots;
}

// Checks that `name` (from the index or a directory listing) is a plain file name whose target
// stays inside the folder, and returns its path.
fs::path checked_weight_path(const fs::path& dir, const std::string& name, const fs::path& source) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::Format, source.string() + ": shard " + quote_untrusted(name) + " " + why);
  };
  if (name.empty() || name == "." || name == ".." || name.find_first_of(std::string("/\\\0", 3)) != std::string::npos) {
    throw bad("is not a plain file name inside the model folder (absolute paths, '..' and "
              "sub-folders are refused)");
  }
  if (!ends_with(name, ".safetensors")) throw bad("does not end in .safetensors");
  fs::path p = dir / name;
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    throw Error(ErrorCode::NotFound,
                source.string() + ": shard " + quote_untrusted(name) + " is missing (" + p.string() + ")");
  }
  fs::path target = fs::weakly_canonical(p, ec);
  if (ec) throw bad("cannot be resolved: " + ec.message());
  auto roots = allowed_roots(dir);
  bool inside = std::any_of(roots.begin(), roots.end(), [&](const fs::path& r) { return is_within(target, r); });
  if (!inside) throw bad("resolves to " + target.string() + ", outside the model folder");
  return p;
}

std::vector<std::string> list_files(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) throw Error(ErrorCode::Io, dir.string() + ": cannot list the folder: " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) throw Error(ErrorCode::Io, dir.string() + ": cannot list the folder: " + ec.message());
    std::error_code ec2;
    if (it->is_regular_file(ec2)) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool is_pickle_name(const std::string& n) {
  return ends_with(n, ".bin") || ends_with(n, ".pt") || ends_with(n, ".pth") || ends_with(n, ".ckpt") ||
         ends_with(n, ".pkl");
}

std::string join(const std::vector<std::string>& v, size_t max_items) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max_items; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > max_items) out += ", ...";
  return out;
}

}  // namespace

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

ModelFolder ModelFolder::open(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error(ErrorCode::NotFound, dir.string() + ": model folder not found (or not a folder)");
  }
  ModelFolder m;
  m.dir_ = dir;
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path, ec)) {
    throw Error(ErrorCode::NotFound,
                config_path.string() + ": not found; a Hugging Face model folder needs config.json");
  }
  // Strict: a duplicate key (num_hidden_layers 2, then 1) would silently pick one of the two.
  const nlohmann::json config_json = parse_json_strict(read_file_bounded(config_path, kMaxConfigJsonBytes),
                                                       config_path.string(), kMaxConfigJsonDepth);
  m.config_ = with_file_context(config_path, [&] { return ModelConfig::from_json(config_json); });
  const fs::path gen_path = dir / "generation_config.json";
  if (fs::exists(gen_path, ec)) {
    const nlohmann::json gen_json = parse_json_strict(read_file_bounded(gen_path, kMaxConfigJsonBytes),
                                                      gen_path.string(), kMaxConfigJsonDepth);
    m.generation_config_ = with_file_context(gen_path, [&] { return GenerationConfig::from_json(gen_json); });
    m.has_generation_config_ = true;
  }

  const fs::path index_path = dir / "model.safetensors.index.json";
  if (fs::exists(index_path, ec)) {
    m.load_indexed(index_path);
    return m;
  }
  if (fs::exists(dir / "model.safetensors", ec)) {
    m.load_single(checked_weight_path(dir, "model.safetensors", dir));
    return m;
  }
  std::vector<std::string> files = list_files(dir);
  std::vector<std::string> st, pickles;
  for (const auto& n : files) {
    if (ends_with(n, ".safetensors")) st.push_back(n);
    if (is_pickle_name(n)) pickles.push_back(n);
  }
  if (st.size() == 1) {
    m.load_single(checked_weight_path(dir, st[0], dir));
    return m;
  }
  if (st.size() > 1) {
    throw Error(ErrorCode::Format, dir.string() + ": found " + std::to_string(st.size()) + " .safetensors files (" +
                                       join(st, 4) +
                                       ") but no model.safetensors.index.json saying which tensor is "
                                       "in which file");
  }
  if (!pickles.empty()) {
    throw Error(ErrorCode::Unsupported,
                dir.string() + ": only PyTorch pickle checkpoints found (" + join(pickles, 4) +
                    "). Pickle files are refused because loading them can run arbitrary code. " +
                    kConvertToSafetensorsHint);
  }
  throw Error(ErrorCode::NotFound, dir.string() + ": no weights found (expected model.safetensors or "
                                                  "model.safetensors.index.json with its shards)");
}

void ModelFolder::add_shard(SafetensorsFile file) {
  const auto shard = static_cast<uint32_t>(shards_.size());
  const auto& tensors = file.tensors();
  for (uint32_t i = 0; i < tensors.size(); ++i) {
    auto [it, inserted] = by_name_.emplace(tensors[i].name, Location{shard, i});
    if (!inserted) {
      throw Error(ErrorCode::Format, file.path().string() + ": tensor " + quote_untrusted(tensors[i].name) +
                                         " also appears in " + shards_[it->second.shard].path().string());
    }
  }
  shards_.push_back(std::move(file));
}

void ModelFolder::load_single(const fs::path& file) { add_shard(SafetensorsFile::open(file)); }

void ModelFolder::load_indexed(const fs::path& index_file) {
  const std::string src = index_file.string();
  nlohmann::json index = parse_json_strict(read_file_bounded(index_file, kMaxIndexJsonBytes), src, 8, kMaxIndexTensors);
  if (!index.is_object()) throw Error(ErrorCode::Format, src + ": not a JSON object");
  auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object()) {
    throw Error(ErrorCode::Format, src + ": missing or non-object \"weight_map\"");
  }
  std::map<std::string, std::set<std::string>> by_shard;  // shard -> tensor names
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string()) {
      throw Error(ErrorCode::Format,
                  src + ": weight_map entry for " + quote_untrusted(tensor) + " is not a file name string");
    }
    by_shard[shard.get<std::string>()].insert(tensor);
  }
  if (by_shard.empty()) throw Error(ErrorCode::Format, src + ": \"weight_map\" is empty");
  if (by_shard.size() > kMaxShards) {
    throw Error(ErrorCode::Format, src + ": names " + std::to_string(by_shard.size()) +
                                       " shards, more than the limit of " + std::to_string(kMaxShards));
  }
  for (const auto& [shard_name, names] : by_shard) {
    SafetensorsFile file = SafetensorsFile::open(checked_weight_path(dir_, shard_name, index_file));
    std::set<std::string_view> present;
    for (const auto& t : file.tensors()) {
      if (!names.count(t.name)) {
        auto other = wm->find(t.name);
        std::string where = other == wm->end() ? "does not list it"
                                               : "lists it under " + quote_untrusted(other->get<std::string>());
        throw Error(ErrorCode::Format,
                    file.path().string() + " holds tensor " + quote_untrusted(t.name) + " but " + src + " " + where);
      }
      present.insert(t.name);
    }
    for (const auto& n : names) {
      if (!present.count(n)) {
        throw Error(ErrorCode::Format, src + ": says tensor " + quote_untrusted(n) + " is in " +
                                           quote_untrusted(shard_name) + ", but that file has no such tensor");
      }
    }
    add_shard(std::move(file));
  }
}

void ModelFolder::check_unchanged() const {
  if (MappingGuard::faults_handled() == 0) return;  // the common case: one atomic load
  for (const SafetensorsFile& s : shards_)
    if (s.invalidated()) throw s.changed_on_disk_error();
}

const ModelFolder::Location* ModelFolder::locate(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

const HostTensor* ModelFolder::find(std::string_view name) const {
  const Location* loc = locate(name);
  return loc ? &shards_[loc->shard].tensors()[loc->index] : nullptr;
}

const HostTensor& ModelFolder::get(std::string_view name, const std::vector<int64_t>& expected_shape) const {
  const Location* loc = locate(name);
  if (!loc) {
    throw Error(ErrorCode::NotFound,
                dir_.string() + ": tensor \"" + std::string(name) + "\" not found in the model's weights");
  }
  const SafetensorsFile& shard = shards_[loc->shard];
  const HostTensor& t = shard.tensors()[loc->index];
  if (t.shape != expected_shape) {
    throw Error(ErrorCode::Format, shard.path().string() + ": tensor \"" + t.name + "\" has shape " +
                                       shape_to_string(t.shape) + ", expected " + shape_to_string(expected_shape) +
                                       " from config.json");
  }
  return t;
}

std::vector<std::string> ModelFolder::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(by_name_.size());
  for (const auto& [n, loc] : by_name_) names.push_back(n);
  std::sort(names.begin(), names.end());
  return names;
}

int64_t ModelFolder::weight_bytes() const {
  int64_t total = 0;
  for (const auto& s : shards_) {
    for (const auto& t : s.tensors()) total += static_cast<int64_t>(t.nbytes);
  }
  return total;
}

fs::path ModelFolder::file_of(std::string_view name) const {
  const Location* loc = locate(name);
  if (!loc) {
    throw Error(ErrorCode::NotFound,
                dir_.string() + ": tensor \"" + std::string(name) + "\" not found in the model's weights");
  }
  return shards_[loc->shard].path();
}

}  // namespace inferdesk
