// One file of a snapshot, from the Hub into the cache: reuse the blob when it is there, else take
// the blob's lock, resume blobs/<etag>.incomplete with an HTTP Range from the bytes on disk, hash
// while writing, retry what may pass (dropped connections, 5xx, 429 with Retry-After), verify the
// digest the file list gave, then rename into blobs/ and link the snapshot. Nothing reaches the
// final name unverified; a failure leaves at most the .incomplete file (which a later run resumes,
// unless its bytes were proved wrong, in which case it is deleted).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/hub/digest.h"
#include "core/hub/download_types.h"
#include "core/hub/hf_cache.h"
#include "core/hub/hub_client.h"

namespace inferdesk::hub {

enum class StopRequest { None, Pause, Cancel };

// What a transfer needs from whoever runs it (SnapshotDownload, or a test).
class TransferControl {
 public:
  virtual ~TransferControl() = default;
  virtual StopRequest stop_requested() const = 0;
  // State changes always arrive; byte counts as the data flows.
  virtual void report(FileState state, int64_t bytes_done, int attempt, const std::string& message) = 0;
  // Waits, waking early when a stop is requested; false then.
  virtual bool sleep_for(std::chrono::milliseconds d) = 0;
};

enum class TransferOutcome { Done, Reused, Paused, Cancelled };

struct TransferOptions {
  RetryPolicy retry;
  int integrity_retries = 1;
};

class FileTransfer {
 public:
  FileTransfer(const HubClient& client, const HfCache& cache, std::string repo_id, std::string commit, RepoFile file,
               TransferOptions options);
  // Runs until the file is Done or Reused, or a stop is requested. Throws HubError when it fails
  // for good. May be called again after Paused: the digest of the bytes on disk is kept meanwhile.
  TransferOutcome run(TransferControl& control);

 private:
  TransferOutcome run_locked(TransferControl& control);
  void download_once(TransferControl& control, int attempt);
  void prepare_digest(int64_t on_disk);
  void verify_and_commit(TransferControl& control, int attempt);
  void link();

  const HubClient& client_;
  const HfCache& cache_;
  std::string repo_id_, commit_;
  RepoFile file_;
  TransferOptions options_;
  std::unique_ptr<Digest> digest_;  // covers the first hashed_ bytes of the .incomplete file
  int64_t hashed_ = 0;
};

}  // namespace inferdesk::hub
