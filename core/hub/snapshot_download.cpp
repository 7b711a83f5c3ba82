#include "core/hub/snapshot_download.h"

#include <algorithm>

namespace inferdesk::hub {

using Clock = std::chrono::steady_clock;

const char* to_string(FileState s) {
  switch (s) {
    case FileState::Queued: return "queued";
    case FileState::Connecting: return "connecting";
    case FileState::Downloading: return "downloading";
    case FileState::Verifying: return "verifying";
    case FileState::Done: return "done";
    case FileState::Paused: return "paused";
    case FileState::Failed: return "failed";
    case FileState::Cancelled: return "cancelled";
  }
  return "queued";
}

struct SnapshotDownload::Task {
  PlannedFile planned;
  FileProgress progress;
  std::unique_ptr<FileTransfer> transfer;  // kept across pauses: it holds the running digest
  bool running = false;
  Clock::time_point last_sample, last_report;
  int64_t last_sample_bytes = 0;
};

class SnapshotDownload::Control : public TransferControl {
 public:
  Control(SnapshotDownload& d, Task& t) : d_(d), t_(t) {}
  StopRequest stop_requested() const override {
    if (d_.cancelled_) return StopRequest::Cancel;
    return d_.paused_ ? StopRequest::Pause : StopRequest::None;
  }
  void report(FileState state, int64_t bytes, int attempt, const std::string& message) override {
    d_.update(t_, state, bytes, attempt, message, false);
  }
  bool sleep_for(std::chrono::milliseconds ms) override {
    std::unique_lock lock(d_.mutex_);
    return !d_.changed_.wait_for(lock, ms, [&] { return d_.cancelled_ || d_.paused_; });
  }

 private:
  SnapshotDownload& d_;
  Task& t_;
};

SnapshotDownload::SnapshotDownload(const HubClient& client, HfCache cache, DownloadPlan plan, DownloadOptions options,
                                   DownloadCallbacks callbacks)
    : client_(client),
      cache_(std::move(cache)),
      plan_(std::move(plan)),
      options_(options),
      callbacks_(std::move(callbacks)) {
  for (const PlannedFile& f : plan_.files) {
    auto t = std::make_unique<Task>();
    t->planned = f;
    t->progress.path = f.file.path;
    t->progress.size = f.file.size;
    t->progress.bytes_done = f.in_snapshot ? f.file.size : f.partial_bytes;
    if (f.in_snapshot) {
      t->progress.state = FileState::Done;
      t->progress.from_cache = true;
      t->progress.message = "already in the cache";
    }
    tasks_.push_back(std::move(t));
  }
}

SnapshotDownload::~SnapshotDownload() {
  cancel();
  for (auto& w : workers_)
    if (w.joinable()) w.join();
}

void SnapshotDownload::start() {
  size_t pending = 0;
  {
    std::lock_guard lock(mutex_);
    if (started_) return;
    started_ = true;
    for (const auto& t : tasks_) pending += is_final(t->progress.state) ? 0 : 1;
  }
  const size_t n = std::min<size_t>(pending, static_cast<size_t>(std::max(1, options_.parallel_files)));
  for (size_t i = 0; i < n; ++i) workers_.emplace_back([this] { worker(); });
  if (n == 0) finish_if_done();
}

bool SnapshotDownload::stop(std::atomic<bool>& flag, FileState state) {
  std::vector<Task*> idle;
  {
    std::lock_guard lock(mutex_);
    if (cancelled_ || finished_) return false;
    flag = true;
    for (auto& t : tasks_)
      if (!t->running && !is_final(t->progress.state)) idle.push_back(t.get());
  }
  changed_.notify_all();  // wakes transfers sleeping before a retry
  for (Task* t : idle) update(*t, state, t->progress.bytes_done, t->progress.attempt, "", true);
  return true;
}

void SnapshotDownload::pause() { stop(paused_, FileState::Paused); }

void SnapshotDownload::resume() {
  std::vector<Task*> waiting;
  {
    std::lock_guard lock(mutex_);
    if (!paused_) return;
    paused_ = false;
    for (auto& t : tasks_)
      if (t->progress.state == FileState::Paused) waiting.push_back(t.get());
  }
  for (Task* t : waiting) update(*t, FileState::Queued, t->progress.bytes_done, 1, "", true);
  changed_.notify_all();
}

void SnapshotDownload::cancel() {
  if (stop(cancelled_, FileState::Cancelled)) finish_if_done();
}

bool SnapshotDownload::paused() const { return paused_; }

bool SnapshotDownload::finished() const {
  std::lock_guard lock(mutex_);
  return finished_;
}

DownloadResult SnapshotDownload::wait() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return finished_; });
  return make_result();
}

std::optional<DownloadResult> SnapshotDownload::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [&] { return finished_; })) return std::nullopt;
  return make_result();
}

std::vector<FileProgress> SnapshotDownload::progress() const {
  std::lock_guard lock(mutex_);
  std::vector<FileProgress> out;
  for (const auto& t : tasks_) out.push_back(t->progress);
  return out;
}

void SnapshotDownload::worker() {
  for (int i = next_task(); i >= 0; i = next_task()) run_task(*tasks_[static_cast<size_t>(i)]);
  finish_if_done();
}

int SnapshotDownload::next_task() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (cancelled_) return -1;
    bool pending = false;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      Task& t = *tasks_[i];
      if (t.running || is_final(t.progress.state)) continue;
      pending = true;
      if (!paused_ && t.progress.state == FileState::Queued) {
        t.running = true;
        return static_cast<int>(i);
      }
    }
    if (!pending) return -1;  // what is left is running on other workers
    changed_.wait(lock);
  }
}

void SnapshotDownload::run_task(Task& task) {
  if (!task.transfer)
    task.transfer = std::make_unique<FileTransfer>(client_, cache_, plan_.repo_id, plan_.commit, task.planned.file,
                                                   TransferOptions{options_.retry, options_.integrity_retries});
  Control control(*this, task);
  FileState final_state = FileState::Failed;
  std::string message;
  std::optional<HubErrorKind> kind;
  bool reused = false;
  try {
    switch (task.transfer->run(control)) {
      case TransferOutcome::Done: final_state = FileState::Done; break;
      case TransferOutcome::Reused:
        final_state = FileState::Done;
        reused = true;
        message = "already in the cache";
        break;
      case TransferOutcome::Paused: final_state = FileState::Paused; break;
      case TransferOutcome::Cancelled: final_state = FileState::Cancelled; break;
    }
  } catch (const HubError& e) {
    message = e.what();
    kind = e.kind();
  } catch (const std::exception& e) {
    message = e.what();
    kind = HubErrorKind::Io;
  }
  {
    std::lock_guard lock(mutex_);
    task.running = false;
    // Resumed while this transfer was stopping: back in the queue instead of stuck paused.
    if (final_state == FileState::Paused && !paused_)
      final_state = cancelled_ ? FileState::Cancelled : FileState::Queued;
    task.progress.error = kind;
    task.progress.from_cache = reused;
  }
  const int64_t bytes = final_state == FileState::Done ? task.progress.size : task.progress.bytes_done;
  update(task, final_state, bytes, task.progress.attempt, message, true);
  changed_.notify_all();
}

void SnapshotDownload::update(Task& task, FileState state, int64_t bytes, int attempt, const std::string& message,
                              bool force) {
  FileProgress copy;
  {
    std::lock_guard lock(mutex_);
    FileProgress& p = task.progress;
    if (is_final(p.state)) return;  // a final state is never reported otherwise
    const Clock::time_point now = Clock::now();
    const bool changed = state != p.state || message != p.message || attempt != p.attempt;
    if (state != FileState::Downloading || p.state != FileState::Downloading) {
      p.speed_bytes_per_s = 0;
      task.last_sample = now;
      task.last_sample_bytes = bytes;
    } else if (const double dt = std::chrono::duration<double>(now - task.last_sample).count(); dt >= 0.5) {
      const double inst = static_cast<double>(bytes - task.last_sample_bytes) / dt;
      p.speed_bytes_per_s = p.speed_bytes_per_s == 0 ? inst : 0.6 * p.speed_bytes_per_s + 0.4 * inst;
      task.last_sample = now;
      task.last_sample_bytes = bytes;
    }
    p.state = state;
    p.bytes_done = bytes;
    p.attempt = attempt;
    p.message = message;
    p.eta_s = p.speed_bytes_per_s > 0 ? static_cast<double>(p.size - bytes) / p.speed_bytes_per_s : -1;
    if (!force && !changed && now - task.last_report < options_.progress_interval) return;
    task.last_report = now;
    copy = p;
  }
  if (callbacks_.on_file) callbacks_.on_file(copy);
}

void SnapshotDownload::finish_if_done() {
  DownloadResult result;
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    for (const auto& t : tasks_)
      if (t->running || !is_final(t->progress.state)) return;
    const bool all_done = std::all_of(tasks_.begin(), tasks_.end(),
                                      [](const auto& t) { return t->progress.state == FileState::Done; });
    // The ref last, once the snapshot is whole: offline lookups then find only complete snapshots.
    if (all_done && !plan_.offline && !ref_written_) {
      try {
        cache_.write_ref(plan_.repo_id, plan_.revision, plan_.commit);
        ref_written_ = true;
      } catch (const HubError&) {  // the snapshot is usable by its commit all the same
      }
    }
    finished_ = true;
    result = make_result();
  }
  changed_.notify_all();
  if (callbacks_.on_finished) callbacks_.on_finished(result);
}

DownloadResult SnapshotDownload::make_result() const {
  DownloadResult r;
  r.snapshot_dir = plan_.snapshot_dir;
  r.commit = plan_.commit;
  r.cancelled = cancelled_;
  r.ok = !tasks_.empty();
  for (const auto& t : tasks_) {
    r.files.push_back(t->progress);
    if (t->progress.state != FileState::Done) r.ok = false;
    if (t->progress.state == FileState::Failed && r.error.empty())
      r.error = t->progress.path + ": " + t->progress.message;
  }
  if (!r.ok && r.error.empty() && r.cancelled) r.error = "cancelled";
  return r;
}

}  // namespace inferdesk::hub
