// The shared Hugging Face cache, laid out exactly as huggingface_hub writes it, so transformers,
// vLLM and huggingface_hub use what InferDesk downloaded and the other way round:
//
//   <cache>/models--org--name/blobs/<etag>               the bytes (etag: LFS sha256 or git oid)
//   <cache>/models--org--name/blobs/<etag>.incomplete    a download in progress (resumable)
//   <cache>/models--org--name/snapshots/<commit>/<path>  relative symlink to ../../blobs/<etag>
//   <cache>/models--org--name/refs/<revision>            the commit the revision resolved to
//   <cache>/.locks/models--org--name/<etag>.lock         flock(2) held while a blob is written
//
// Paths given here are validated by the caller (hub_json.h); every write is atomic (temporary name
// + rename) so a reader never sees half a ref or a dangling link to a blob not yet there.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace inferdesk::hub {

// "org/name" -> "models--org--name".
std::string repo_folder_name(const std::string& repo_id);

class HfCache {
 public:
  explicit HfCache(std::filesystem::path root);
  const std::filesystem::path& root() const { return root_; }

  std::filesystem::path repo_dir(const std::string& repo_id) const;
  std::filesystem::path blob_path(const std::string& repo_id, const std::string& etag) const;
  std::filesystem::path incomplete_path(const std::string& repo_id, const std::string& etag) const;
  std::filesystem::path lock_path(const std::string& repo_id, const std::string& etag) const;
  std::filesystem::path snapshot_dir(const std::string& repo_id, const std::string& commit) const;
  std::filesystem::path snapshot_file(const std::string& repo_id, const std::string& commit,
                                      const std::string& path) const;

  // The commit refs/<revision> names; a 40-hex revision is its own commit.
  std::optional<std::string> read_ref(const std::string& repo_id, const std::string& revision) const;
  // refs/<revision> = commit (atomically; nothing when revision is the commit itself).
  void write_ref(const std::string& repo_id, const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<path> -> ../../blobs/<etag> (one more ../ per directory in `path`),
  // replacing what was there.
  void link_snapshot_file(const std::string& repo_id, const std::string& commit, const std::string& path,
                          const std::string& etag) const;
  // The snapshot file exists and resolves to a regular file (a link to a present blob).
  bool has_snapshot_file(const std::string& repo_id, const std::string& commit, const std::string& path) const;
  // For offline use: the snapshot folder of `revision` when the cache has one.
  std::optional<std::filesystem::path> cached_snapshot(const std::string& repo_id, const std::string& revision) const;
  // Deletes the repo's blobs/*.incomplete (a cancelled download the user does not want resumed).
  void remove_partial_downloads(const std::string& repo_id) const;
  // Creates the repo's blobs/, snapshots/, refs/ and the lock folder, and the cache's CACHEDIR.TAG.
  void prepare_repo(const std::string& repo_id) const;

 private:
  std::filesystem::path root_;
};

// An exclusive flock(2) on a lock file (huggingface_hub's filelock takes the same lock on the same
// path, so the two never write one blob at once). Released on destruction, or by the kernel when
// the process dies.
class BlobLock {
 public:
  explicit BlobLock(const std::filesystem::path& path);  // opens (creates) the lock file
  ~BlobLock();
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;
  bool try_lock();  // non-blocking
  bool locked() const { return locked_; }

 private:
  int fd_ = -1;
  bool locked_ = false;
};

}  // namespace inferdesk::hub
