// A running download of one repository snapshot: a few files at a time on worker threads, each a
// FileTransfer (resume, retry, verify, atomic commit), with pause, resume and cancel from any
// thread. The GUI's downloads panel owns one per download and shows FileProgress; the CLI prints it.
//
// Threading: start() spawns the workers and returns. Callbacks run on worker threads (and, for the
// files no worker holds, on the thread calling pause/resume/cancel), must be quick and must not
// call back into this object from the same call (post to your own thread instead: a queued Qt
// signal). pause, resume, cancel, progress, wait and wait_for may be called from any thread. The
// destructor cancels and joins.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/hub/download_types.h"
#include "core/hub/file_transfer.h"
#include "core/hub/hf_cache.h"
#include "core/hub/hub_client.h"

namespace inferdesk::hub {

struct DownloadCallbacks {
  // A file's state changed, or its bytes moved (at most once per progress_interval per file).
  std::function<void(const FileProgress&)> on_file;
  // Every file is Done, Failed or Cancelled. Called once, from the last worker to finish.
  std::function<void(const DownloadResult&)> on_finished;
};

class SnapshotDownload {
 public:
  // `client` must outlive this object; the plan comes from plan_download().
  SnapshotDownload(const HubClient& client, HfCache cache, DownloadPlan plan, DownloadOptions options,
                   DownloadCallbacks callbacks = {});
  ~SnapshotDownload();
  SnapshotDownload(const SnapshotDownload&) = delete;
  SnapshotDownload& operator=(const SnapshotDownload&) = delete;

  void start();
  // Stops the transfers, keeping their bytes on disk; files read Paused until resume().
  void pause();
  void resume();
  // Stops everything for good; unfinished files read Cancelled. Their .incomplete bytes stay, so a
  // later download of the same files resumes (HfCache::remove_partial_downloads() drops them).
  void cancel();
  bool paused() const;

  // Blocks until every file is final; returns the result (also after cancel()).
  DownloadResult wait();
  // Like wait() but gives up after `timeout`; nullopt then.
  std::optional<DownloadResult> wait_for(std::chrono::milliseconds timeout);
  bool finished() const;

  std::vector<FileProgress> progress() const;
  const DownloadPlan& plan() const { return plan_; }

 private:
  struct Task;
  class Control;

  // Sets `flag` (paused_ or cancelled_) and shows `state` on every file no worker holds; false when
  // already cancelled or finished.
  bool stop(std::atomic<bool>& flag, FileState state);
  void worker();
  int next_task();  // -1 when nothing is left to do
  void run_task(Task& task);
  void update(Task& task, FileState state, int64_t bytes, int attempt, const std::string& message, bool force);
  void finish_if_done();
  DownloadResult make_result() const;  // mutex_ held

  const HubClient& client_;
  HfCache cache_;
  DownloadPlan plan_;
  DownloadOptions options_;
  DownloadCallbacks callbacks_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Task>> tasks_;
  std::vector<std::thread> workers_;
  std::atomic<bool> paused_{false};
  std::atomic<bool> cancelled_{false};
  bool started_ = false;
  bool finished_ = false;
  bool ref_written_ = false;
};

}  // namespace inferdesk::hub
