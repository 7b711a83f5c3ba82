// The downloader's public vocabulary: what to download, how, and what each file is doing. The GUI's
// downloads panel and the CLI's progress lines are both views of FileProgress.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/hub/file_filter.h"
#include "core/hub/hub_error.h"
#include "core/hub/hub_types.h"
#include "core/hub/retry.h"

namespace inferdesk::hub {

// queued -> connecting -> downloading -> verifying -> done, or failed / cancelled at any point;
// paused from any non-final state, back to queued on resume. A file is Done only after its bytes
// hashed to the listed digest and sit under their final name.
enum class FileState { Queued, Connecting, Downloading, Verifying, Done, Paused, Failed, Cancelled };
const char* to_string(FileState s);
inline bool is_final(FileState s) {
  return s == FileState::Done || s == FileState::Failed || s == FileState::Cancelled;
}

struct FileProgress {
  std::string path;  // in the repository ("model-00001-of-00002.safetensors")
  FileState state = FileState::Queued;
  int64_t size = 0;                   // bytes the file list gives
  int64_t bytes_done = 0;             // bytes on disk for it (resumed ones included)
  double speed_bytes_per_s = 0;       // smoothed over the last seconds; 0 when idle
  double eta_s = -1;                  // -1 when unknown
  int attempt = 1;                    // 1 + retries of the current run
  bool from_cache = false;            // Done without downloading (snapshot link or blob already there)
  std::string message;                // why it failed, or what it waits for ("retrying in 2 s: HTTP 500")
  std::optional<HubErrorKind> error;  // set when Failed
};

struct DownloadRequest {
  std::string repo_id;  // "org/name"
  std::string revision = "main";
  FileFilter filter;  // --include globs, on top of the allow-list
};

struct DownloadOptions {
  int parallel_files = 4;
  RetryPolicy retry;
  int integrity_retries = 1;                         // downloads from zero after a checksum mismatch before failing
  int64_t reserve_free_bytes = 0;                    // keep at least this much free on the cache's file system
  std::chrono::milliseconds progress_interval{250};  // at most one progress callback per file per interval
  bool offline = false;                              // HF_HUB_OFFLINE: answer from the cache only
};

struct PlannedFile {
  RepoFile file;
  bool in_snapshot = false;   // snapshots/<commit>/<path> already resolves
  bool blob_present = false;  // blobs/<etag> is there (another revision had it): only a link is needed
  int64_t partial_bytes = 0;  // blobs/<etag>.incomplete from an earlier run
};

struct SkippedFile {
  std::string path;
  std::string reason;
};

// What a download will do, worked out before any byte moves (so the GUI can show it and the disk
// check can refuse it).
struct DownloadPlan {
  std::string repo_id, revision, commit;
  std::optional<ModelInfo> info;  // absent offline
  std::vector<PlannedFile> files;
  std::vector<SkippedFile> skipped;  // outside the allow-list or the --include globs
  int64_t total_bytes = 0;           // of the selected files
  int64_t bytes_to_download = 0;     // what is not on disk yet
  int64_t free_bytes = -1;           // on the cache's file system at planning time
  bool offline = false;
  std::filesystem::path snapshot_dir;
};

struct DownloadResult {
  bool ok = false;  // every file Done
  bool cancelled = false;
  std::filesystem::path snapshot_dir;
  std::string commit;
  std::vector<FileProgress> files;
  std::string error;  // the first failure's message, when !ok
};

}  // namespace inferdesk::hub
