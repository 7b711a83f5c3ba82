#include "core/hub/download_plan.h"

#include <algorithm>
#include <system_error>

#include "core/hub/hub_json.h"

namespace inferdesk::hub {

namespace fs = std::filesystem;

namespace {

int64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

std::string mb(int64_t bytes) { return std::to_string((bytes + 500000) / 1000000) + " MB"; }

DownloadPlan plan_offline(const HfCache& cache, const DownloadRequest& req) {
  const auto dir = cache.cached_snapshot(req.repo_id, req.revision);
  if (!dir)
    throw HubError(HubErrorKind::Offline, "HF_HUB_OFFLINE is set and " + req.repo_id + " (revision " + req.revision +
                                              ") is not in the cache at " + cache.root().string() +
                                              ": unset HF_HUB_OFFLINE to download it");
  DownloadPlan plan;
  plan.repo_id = req.repo_id;
  plan.revision = req.revision;
  plan.commit = dir->filename().string();
  plan.offline = true;
  plan.snapshot_dir = *dir;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(*dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;  // follows the snapshot's links; a dangling one is skipped
    // lexically: fs::relative would resolve the snapshot links into ../../blobs/...
    const std::string rel = it->path().lexically_relative(*dir).generic_string();
    if (!is_selected(req.filter, rel)) continue;
    PlannedFile f;
    f.file.path = rel;
    f.file.size = file_size_or_zero(it->path());
    f.in_snapshot = true;
    plan.total_bytes += f.file.size;
    plan.files.push_back(std::move(f));
  }
  if (plan.files.empty())
    throw HubError(HubErrorKind::Offline, "HF_HUB_OFFLINE is set and the cached snapshot " + dir->string() +
                                              " has no file matching the request");
  return plan;
}

void select_files(const std::vector<RepoFile>& files, const FileFilter& filter, DownloadPlan& plan,
                  const HfCache& cache) {
  for (const RepoFile& f : files) {
    if (const std::string why = allow_list_refusal(f.path); !why.empty()) {
      plan.skipped.push_back({f.path, why});
      continue;
    }
    if (!is_selected(filter, f.path)) {
      plan.skipped.push_back({f.path, "not matched by --include"});
      continue;
    }
    PlannedFile p;
    p.file = f;
    p.in_snapshot = cache.has_snapshot_file(plan.repo_id, plan.commit, f.path);
    std::error_code ec;
    p.blob_present = fs::is_regular_file(cache.blob_path(plan.repo_id, f.etag()), ec);
    p.partial_bytes = std::min(file_size_or_zero(cache.incomplete_path(plan.repo_id, f.etag())), f.size);
    plan.total_bytes += f.size;
    if (!p.in_snapshot && !p.blob_present) plan.bytes_to_download += f.size - p.partial_bytes;
    plan.files.push_back(std::move(p));
  }
}

}  // namespace

int64_t free_space_at(const fs::path& dir) {
  fs::path p = dir;
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) {
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  if (p.empty()) p = ".";
  const fs::space_info s = fs::space(p, ec);
  return ec ? -1 : static_cast<int64_t>(s.available);
}

DownloadPlan plan_download(const HubClient& client, const HfCache& cache, const DownloadRequest& req,
                           const DownloadOptions& options) {
  if (!is_valid_repo_id(req.repo_id))
    throw HubError(HubErrorKind::RepoNotFound, "'" + req.repo_id + "' is not a repository id (expected ORG/NAME)");
  if (!is_valid_revision(req.revision))
    throw HubError(HubErrorKind::RevisionNotFound, "'" + req.revision + "' is not a valid revision");
  if (options.offline) return plan_offline(cache, req);

  DownloadPlan plan;
  plan.repo_id = req.repo_id;
  plan.revision = req.revision;
  plan.info = client.model_info(req.repo_id, req.revision);
  plan.commit = plan.info->sha;
  plan.snapshot_dir = cache.snapshot_dir(req.repo_id, plan.commit);
  // Pinned to the commit: a push during the download cannot mix two revisions in one snapshot.
  select_files(client.list_files(req.repo_id, plan.commit), req.filter, plan, cache);
  if (plan.files.empty())
    throw HubError(HubErrorKind::NotAllowed,
                   "nothing to download from " + req.repo_id +
                       ": no file passes the "
                       "allow-list (safetensors, JSON, tokenizer files) and the --include globs");

  const auto missing = std::find_if(plan.files.begin(), plan.files.end(),
                                    [](const PlannedFile& f) { return !f.in_snapshot && !f.blob_present; });
  // A gated repo lists its files to anyone but serves them only with access: ask once, up front,
  // so the user reads "request access" instead of one failure per file.
  if (plan.info->gated != Gated::No && missing != plan.files.end())
    client.file_metadata(req.repo_id, plan.commit, missing->file.path);

  plan.free_bytes = free_space_at(cache.repo_dir(req.repo_id));
  if (plan.free_bytes >= 0 && plan.bytes_to_download + options.reserve_free_bytes > plan.free_bytes)
    throw HubError(HubErrorKind::DiskSpace,
                   req.repo_id + " needs " + mb(plan.bytes_to_download) + " more" +
                       (options.reserve_free_bytes > 0 ? " (plus " + mb(options.reserve_free_bytes) + " kept free)"
                                                       : "") +
                       " but " + cache.root().string() + " has " + mb(plan.free_bytes) +
                       " free: free some space or choose another cache folder");
  return plan;
}

}  // namespace inferdesk::hub
