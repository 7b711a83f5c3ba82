#include "core/hub/hf_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>

#include "core/hub/hub_error.h"
#include "core/hub/hub_json.h"

namespace inferdesk::hub {

namespace fs = std::filesystem;

namespace {

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  std::string s(".");  // built step by step: GCC 12 warns (-Wrestrict) about "." + std::string
  s += std::to_string(getpid());
  s += '.';
  s += std::to_string(counter++);
  s += ".tmp";
  return s;
}

void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + unique_suffix();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw HubError(HubErrorKind::Io, "cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw HubError(HubErrorKind::Io, "cannot write " + path.string());
  }
}

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw HubError(HubErrorKind::Io, "cannot create " + dir.string() + ": " + ec.message());
}

constexpr const char* kCachedirTag =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by huggingface_hub (written here by InferDesk).\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n";

}  // namespace

std::string repo_folder_name(const std::string& repo_id) {
  std::string out = "models";
  size_t start = 0;
  while (start <= repo_id.size()) {
    const size_t slash = std::min(repo_id.find('/', start), repo_id.size());
    out += "--" + repo_id.substr(start, slash - start);
    start = slash + 1;
  }
  return out;
}

HfCache::HfCache(fs::path root) : root_(std::move(root)) {}

fs::path HfCache::repo_dir(const std::string& repo_id) const { return root_ / repo_folder_name(repo_id); }
fs::path HfCache::blob_path(const std::string& repo_id, const std::string& etag) const {
  return repo_dir(repo_id) / "blobs" / etag;
}
fs::path HfCache::incomplete_path(const std::string& repo_id, const std::string& etag) const {
  return repo_dir(repo_id) / "blobs" / (etag + ".incomplete");
}
fs::path HfCache::lock_path(const std::string& repo_id, const std::string& etag) const {
  return root_ / ".locks" / repo_folder_name(repo_id) / (etag + ".lock");
}
fs::path HfCache::snapshot_dir(const std::string& repo_id, const std::string& commit) const {
  return repo_dir(repo_id) / "snapshots" / commit;
}
fs::path HfCache::snapshot_file(const std::string& repo_id, const std::string& commit, const std::string& path) const {
  return snapshot_dir(repo_id, commit) / path;
}

std::optional<std::string> HfCache::read_ref(const std::string& repo_id, const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(repo_dir(repo_id) / "refs" / revision);
  if (!in) return std::nullopt;
  std::string commit;
  std::getline(in, commit);
  while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r' || commit.back() == ' ')) commit.pop_back();
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

void HfCache::write_ref(const std::string& repo_id, const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  const fs::path ref = repo_dir(repo_id) / "refs" / revision;
  if (read_ref(repo_id, revision) == commit) return;  // unchanged: a read-only cache stays usable
  make_dirs(ref.parent_path());
  write_atomically(ref, commit);  // no newline, as huggingface_hub writes it
}

void HfCache::link_snapshot_file(const std::string& repo_id, const std::string& commit, const std::string& path,
                                 const std::string& etag) const {
  const fs::path link = snapshot_file(repo_id, commit, path);
  make_dirs(link.parent_path());
  std::string target;
  const auto depth = std::count(path.begin(), path.end(), '/');
  for (int i = 0; i < depth + 2; ++i) target += "../";
  target += "blobs/" + etag;
  const fs::path tmp = link.string() + unique_suffix();
  std::error_code ec;
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) {
    fs::remove(tmp);
    throw HubError(HubErrorKind::Io, "cannot link " + link.string() + " to its blob: " + ec.message());
  }
}

bool HfCache::has_snapshot_file(const std::string& repo_id, const std::string& commit, const std::string& path) const {
  std::error_code ec;
  return fs::is_regular_file(snapshot_file(repo_id, commit, path), ec);
}

std::optional<fs::path> HfCache::cached_snapshot(const std::string& repo_id, const std::string& revision) const {
  const auto commit = read_ref(repo_id, revision);
  if (!commit) return std::nullopt;
  const fs::path dir = snapshot_dir(repo_id, *commit);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  return dir;
}

void HfCache::remove_partial_downloads(const std::string& repo_id) const {
  std::error_code ec;
  for (auto it = fs::directory_iterator(repo_dir(repo_id) / "blobs", ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    if (it->path().extension() == ".incomplete") fs::remove(it->path(), ec);
}

void HfCache::prepare_repo(const std::string& repo_id) const {
  for (const char* sub : {"blobs", "snapshots", "refs"}) make_dirs(repo_dir(repo_id) / sub);
  make_dirs(root_ / ".locks" / repo_folder_name(repo_id));
  const fs::path tag = root_ / "CACHEDIR.TAG";
  std::error_code ec;
  if (!fs::exists(tag, ec)) {
    try {
      write_atomically(tag, kCachedirTag);
    } catch (const HubError&) {  // a tag is a courtesy to backup tools, not worth failing for
    }
  }
}

BlobLock::BlobLock(const fs::path& path) {
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0664);
  if (fd_ < 0) throw HubError(HubErrorKind::Io, "cannot open the lock file " + path.string());
}

BlobLock::~BlobLock() {
  if (fd_ >= 0) close(fd_);  // closing releases the flock
}

bool BlobLock::try_lock() {
  if (!locked_) locked_ = flock(fd_, LOCK_EX | LOCK_NB) == 0;
  return locked_;
}

}  // namespace inferdesk::hub
