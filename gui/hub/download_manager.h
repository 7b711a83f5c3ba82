// DownloadManager: the app's downloads from the Hub, each a core/hub SnapshotDownload owned here
// (and so by the downloads panel that owns this), never by the wizard: closing the wizard leaves
// them running. Planning (which needs the network) runs on HubService's pool; the download's worker
// threads report each file's FileProgress, which is posted to this object's thread and kept in the
// entry, and announced with signals the item model (downloads_model.h) turns into row changes.
//
// A paused download resumes where it stopped; a failed or cancelled one is planned again (with the
// token of that moment) and resumes from the .incomplete bytes already on disk. A finished one is
// added to the model list through the add-model hook (ModelManager::addFolder in the app).
#pragma once

#include <QList>
#include <QObject>
#include <QString>

#include <functional>
#include <memory>
#include <vector>

#include "core/hub/snapshot_download.h"
#include "gui/hub/hub_service.h"
#include "gui/models/model_manager.h"

namespace inferdesk::gui {

enum class DownloadStatus { Planning, Running, Paused, Done, Failed, Cancelled };
QString download_status_text(DownloadStatus s);  // "planning", "downloading", ...
inline bool is_final(DownloadStatus s) {
  return s == DownloadStatus::Done || s == DownloadStatus::Failed || s == DownloadStatus::Cancelled;
}

// What the download is for, as the wizard chose it.
struct DownloadIntent {
  QString variant;            // "BF16", "FP8 on load (from BF16)" (shown in the panel)
  bool add_to_models = true;  // add the snapshot to the model list when it is done
};

struct DownloadEntry {
  int id = 0;
  QString repo_id, revision;
  hub::FileFilter filter;
  DownloadIntent intent;
  DownloadStatus status = DownloadStatus::Planning;
  std::vector<hub::FileProgress> files;  // in the plan's order
  qint64 total_bytes = 0;
  std::optional<HubFailure> failure;  // why it failed (planning, or the first failed file)
  QString snapshot_dir;               // once planned
  qint64 model_id = 0;                // the model list's id once added
  QString model_error;                // why the folder was not added

  qint64 bytesDone() const;
  double speed() const;  // bytes/s of the files moving now
  double eta() const;    // seconds, -1 when unknown

  // Runtime: the client the plan and the download use (kept alive as long as the download).
  std::shared_ptr<const hub::HubClient> client;
  std::unique_ptr<hub::SnapshotDownload> download;
  int generation = 0;  // bumped by each restart: reports of an older run are dropped
};

class DownloadManager : public QObject {
  Q_OBJECT

 public:
  explicit DownloadManager(HubService& hub, QObject* parent = nullptr);
  ~DownloadManager() override;  // cancels and joins every download (their bytes stay resumable)

  // Adds the model folder a finished download produced to the model list.
  using AddModel = std::function<AddModelResult(const QString& folder)>;
  void setAddModel(AddModel add) { add_model_ = std::move(add); }

  // Starts a download (or returns the id of the unfinished one of the same repo and revision).
  int start(const QString& repo_id, const QString& revision, const hub::FileFilter& filter,
            const DownloadIntent& intent);
  void pause(int id);
  // Paused: continues. Failed or cancelled: plans again and resumes from the bytes on disk.
  void resume(int id);
  void cancel(int id);
  // Forgets a finished entry (the files stay in the cache); false while it runs.
  bool remove(int id);
  // Resumes the downloads that failed for want of a token (after one was entered).
  void retryTokenFailures();

  const DownloadEntry* entry(int id) const;
  int find(const QString& repo_id, const QString& revision) const;  // unfinished only; 0 when none
  QList<int> ids() const;                                           // in start order
  int indexOf(int id) const;                                        // -1 when absent

 signals:
  void added(int id);
  void changed(int id);     // status, failure, model id
  void filesReset(int id);  // the file list was replaced (planned, planned again)
  void fileChanged(int id, int index);
  void finished(int id);  // Done, Failed or Cancelled
  void aboutToRemove(int id);
  void removed(int id);

 private:
  DownloadEntry* find(int id);
  void plan(DownloadEntry& e);
  void onPlanned(int id, int generation, hub::DownloadPlan plan);
  void onFile(int id, int generation, const hub::FileProgress& p);
  void onFinished(int id, int generation, const hub::DownloadResult& r);
  void fail(DownloadEntry& e, const HubFailure& f);
  void addToModels(DownloadEntry& e);

  HubService& hub_;
  AddModel add_model_;
  std::vector<std::unique_ptr<DownloadEntry>> entries_;
  int next_id_ = 1;
};

// "12.3 MB/s", "850 kB/s"; "" for 0.
QString format_speed(double bytes_per_s);
// "2 h 05 min", "3 min 20 s", "45 s"; "" for unknown (< 0).
QString format_eta(double seconds);

}  // namespace inferdesk::gui
