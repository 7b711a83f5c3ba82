// What the Hub's API says about models and files, parsed from untrusted JSON (hub_json.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace inferdesk::hub {

// "gated": false | "auto" | "manual" on the Hub.
enum class Gated { No, Auto, Manual };
const char* to_string(Gated g);

// One search result (/api/models?search=...).
struct ModelSummary {
  std::string id;  // "org/name"
  int64_t downloads = 0;
  int64_t likes = 0;
  Gated gated = Gated::No;
  bool is_private = false;
  std::string pipeline_tag;
  std::string library_name;
  std::string model_type;                  // config.model_type, when the reply has it
  std::vector<std::string> architectures;  // config.architectures, when the reply has it
};

// /api/models/{id}/revision/{rev}.
struct ModelInfo {
  std::string id;
  std::string sha;  // the commit the revision resolves to (40 hex)
  Gated gated = Gated::No;
  bool is_private = false;
  bool disabled = false;
  std::string license;  // cardData.license, else a "license:..." tag
  int64_t downloads = 0;
  int64_t likes = 0;
  std::string pipeline_tag;
  std::string library_name;
  std::string last_modified;
  std::vector<std::string> tags;
  std::string model_type;
  std::vector<std::string> architectures;
  std::vector<std::string> siblings;                  // file paths in the repo
  std::map<std::string, int64_t> safetensors_params;  // dtype -> parameter count
  int64_t safetensors_total = -1;                     // -1: the reply had none
  int64_t used_storage = -1;
};

struct LfsInfo {
  std::string sha256;  // 64 hex
  int64_t size = 0;
};

// One file of /api/models/{id}/tree/{rev}?recursive=1 (directories are dropped).
struct RepoFile {
  std::string path;
  int64_t size = 0;
  std::string oid;  // git blob sha-1 (40 hex)
  std::optional<LfsInfo> lfs;
  // The name huggingface_hub gives the blob: the LFS sha-256, else the git oid.
  const std::string& etag() const { return lfs ? lfs->sha256 : oid; }
};

// HEAD /{id}/resolve/{rev}/{path}: what the download will get.
struct FileMetadata {
  std::string commit;    // X-Repo-Commit
  std::string etag;      // X-Linked-Etag, else ETag, normalised (no W/, no quotes)
  int64_t size = -1;     // X-Linked-Size, else Content-Length of a non-redirect reply
  std::string location;  // where to GET the bytes: the redirect target, else the resolve URL
};

}  // namespace inferdesk::hub
