// tokenizer_load seeds: a real tokenizer.json is megabytes, too slow to mutate, so each is cut
// down to its first kKeep ids, the merges among them and its added tokens (renumbered after the
// kept ids, and the post-processor's ids with them). The pipeline (normalizer, pre-tokenizer
// regexes, post-processor, decoder) stays as the model ships it.
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/make_seeds.h"

namespace inferdesk::fuzz {
namespace fs = std::filesystem;
namespace {

// Sorted objects: ordered_json's linear key lookup is quadratic on a 128k-entry vocabulary.
using Json = nlohmann::json;
constexpr int64_t kKeep = 512;

bool keep_merge(const Json& m, const std::set<std::string>& kept) {
  std::string a, b;
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const size_t sp = s.find(' ');
    if (sp == std::string::npos) return false;
    a = s.substr(0, sp);
    b = s.substr(sp + 1);
  } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    a = m[0].get<std::string>();
    b = m[1].get<std::string>();
  } else {
    return false;
  }
  return kept.count(a) && kept.count(b) && kept.count(a + b);
}

// Replaces every id in the post-processor's "ids" arrays through `remap`.
void remap_ids(Json& j, const std::map<int64_t, int64_t>& remap) {
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) {
      if (k == "ids" && v.is_array()) {
        for (auto& id : v)
          if (id.is_number_integer())
            if (auto it = remap.find(id.get<int64_t>()); it != remap.end()) id = it->second;
      } else if (k == "id" && v.is_number_integer()) {
        if (auto it = remap.find(v.get<int64_t>()); it != remap.end()) v = it->second;
      } else {
        remap_ids(v, remap);
      }
    }
  } else if (j.is_array()) {
    for (auto& v : j) remap_ids(v, remap);
  }
}

std::string shrink(const std::string& text) {
  Json j = Json::parse(text);
  Json& model = j["model"];
  std::set<std::string> kept;
  Json vocab = Json::object();
  for (auto& [tok, id] : model["vocab"].items()) {
    if (id.is_number_integer() && id.get<int64_t>() < kKeep) {
      vocab[tok] = id;
      kept.insert(tok);
    }
  }
  model["vocab"] = vocab;
  Json merges = Json::array();
  for (const auto& m : model["merges"])
    if (keep_merge(m, kept)) merges.push_back(m);
  model["merges"] = merges;
  std::map<int64_t, int64_t> remap;
  int64_t next = kKeep;
  for (auto& t : j["added_tokens"]) {
    const int64_t id = t.value("id", int64_t{-1});
    if (id < kKeep) continue;
    remap[id] = next;
    t["id"] = next++;
  }
  remap_ids(j["post_processor"], remap);
  return j.dump();
}

}  // namespace

void make_tokenizer_seeds(const fs::path& shared, const fs::path& out) {
  std::error_code ec;
  for (fs::directory_iterator it(shared / "tokenizers", ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path file = it->path() / "tokenizer.json";
    const std::string text = read_file(file);
    if (text.empty()) continue;
    std::string seed;
    try {
      seed = shrink(text);
    } catch (const std::exception&) {
      continue;  // a layout this cut does not know: no seed from it
    }
    // The model's tokenizer_config.json when it is small (the large ones only list added tokens).
    const std::string config = read_file(it->path() / "tokenizer_config.json");
    if (!config.empty() && config.size() < 16384) seed += "\n%%FILE tokenizer_config.json\n" + config;
    write_seed(out, "tokenizer_load", it->path().filename().string(), seed);
  }
}

}  // namespace inferdesk::fuzz
