// Planning a snapshot download: resolve the revision to a commit, list its files, apply the
// allow-list and --include globs, see what the cache already holds, and refuse up front when the
// disk cannot take the rest. Offline (HF_HUB_OFFLINE), the plan comes from the cache alone.
#pragma once

#include "core/hub/download_types.h"
#include "core/hub/hf_cache.h"
#include "core/hub/hub_client.h"

namespace inferdesk::hub {

// Throws HubError: the Hub's errors (gated, not found, network), DiskSpace, Offline when offline and
// the cache has no snapshot of the revision, NotAllowed when no file is selected.
DownloadPlan plan_download(const HubClient& client, const HfCache& cache, const DownloadRequest& request,
                           const DownloadOptions& options);

// Free bytes on the file system that holds `dir` (its nearest existing ancestor); -1 if unknown.
int64_t free_space_at(const std::filesystem::path& dir);

}  // namespace inferdesk::hub
