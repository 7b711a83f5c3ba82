#include "gui/hub/download_manager.h"

#include <QMetaObject>

#include <algorithm>
#include <cmath>

#include "core/hub/download_plan.h"

namespace inferdesk::gui {

QString download_status_text(DownloadStatus s) {
  switch (s) {
    case DownloadStatus::Planning: return QObject::tr("planning");
    case DownloadStatus::Running: return QObject::tr("downloading");
    case DownloadStatus::Paused: return QObject::tr("paused");
    case DownloadStatus::Done: return QObject::tr("done");
    case DownloadStatus::Failed: return QObject::tr("failed");
    case DownloadStatus::Cancelled: return QObject::tr("cancelled");
  }
  return {};
}

qint64 DownloadEntry::bytesDone() const {
  qint64 n = 0;
  for (const auto& f : files) n += f.bytes_done;
  return n;
}

double DownloadEntry::speed() const {
  double s = 0;
  for (const auto& f : files)
    if (f.state == hub::FileState::Downloading) s += f.speed_bytes_per_s;
  return s;
}

double DownloadEntry::eta() const {
  const double s = speed();
  if (s <= 0 || is_final(status) || status == DownloadStatus::Paused) return -1;
  return std::max<double>(0, total_bytes - bytesDone()) / s;
}

DownloadManager::DownloadManager(HubService& hub, QObject* parent) : QObject(parent), hub_(hub) {}

// The downloads stop here, while this object still exists: their last reports are posted to it and
// dropped with it.
DownloadManager::~DownloadManager() { entries_.clear(); }

DownloadEntry* DownloadManager::find(int id) {
  for (auto& e : entries_)
    if (e->id == id) return e.get();
  return nullptr;
}

const DownloadEntry* DownloadManager::entry(int id) const { return const_cast<DownloadManager*>(this)->find(id); }

int DownloadManager::find(const QString& repo_id, const QString& revision) const {
  for (const auto& e : entries_)
    if (e->repo_id == repo_id && e->revision == revision && !is_final(e->status)) return e->id;
  return 0;
}

QList<int> DownloadManager::ids() const {
  QList<int> out;
  for (const auto& e : entries_) out << e->id;
  return out;
}

int DownloadManager::indexOf(int id) const {
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i]->id == id) return static_cast<int>(i);
  return -1;
}

int DownloadManager::start(const QString& repo_id, const QString& revision, const hub::FileFilter& filter,
                           const DownloadIntent& intent) {
  if (const int running = find(repo_id, revision)) return running;
  auto e = std::make_unique<DownloadEntry>();
  e->id = next_id_++;
  e->repo_id = repo_id;
  e->revision = revision;
  e->filter = filter;
  e->intent = intent;
  DownloadEntry& ref = *e;
  entries_.push_back(std::move(e));
  emit added(ref.id);
  plan(ref);
  return ref.id;
}

void DownloadManager::plan(DownloadEntry& e) {
  e.status = DownloadStatus::Planning;
  e.failure.reset();
  e.client = hub_.client();  // the token of this moment
  const hub::DownloadRequest request{e.repo_id.toStdString(), e.revision.toStdString(), e.filter};
  const hub::HfCache cache = hub_.cache();
  const hub::DownloadOptions options = hub_.downloadOptions();
  const int id = e.id, generation = e.generation;
  hub_.call<hub::DownloadPlan>(
      this, e.client, request.repo_id,
      [request, cache, options](const hub::HubClient& c) { return hub::plan_download(c, cache, request, options); },
      [this, id, generation](hub::DownloadPlan p) { onPlanned(id, generation, std::move(p)); },
      [this, id, generation](const HubFailure& f) {
        if (DownloadEntry* e = find(id); e && e->generation == generation) fail(*e, f);
      });
  emit changed(e.id);
}

void DownloadManager::onPlanned(int id, int generation, hub::DownloadPlan plan) {
  DownloadEntry* e = find(id);
  if (!e || e->generation != generation || e->status != DownloadStatus::Planning) return;
  // Worker threads report here through queued calls; a report of an older run (or one arriving
  // after this object is gone) is dropped.
  hub::DownloadCallbacks callbacks;
  callbacks.on_file = [this, id, generation](const hub::FileProgress& p) {
    QMetaObject::invokeMethod(
        this, [this, id, generation, p] { onFile(id, generation, p); }, Qt::QueuedConnection);
  };
  callbacks.on_finished = [this, id, generation](const hub::DownloadResult& r) {
    QMetaObject::invokeMethod(
        this, [this, id, generation, r] { onFinished(id, generation, r); }, Qt::QueuedConnection);
  };
  e->total_bytes = plan.total_bytes;
  e->snapshot_dir = QString::fromStdString(plan.snapshot_dir.string());
  e->download = std::make_unique<hub::SnapshotDownload>(*e->client, hub_.cache(), std::move(plan),
                                                        hub_.downloadOptions(), callbacks);
  e->files = e->download->progress();
  e->status = DownloadStatus::Running;
  emit filesReset(id);
  emit changed(id);
  e->download->start();
}

void DownloadManager::onFile(int id, int generation, const hub::FileProgress& p) {
  DownloadEntry* e = find(id);
  if (!e || e->generation != generation) return;
  for (size_t i = 0; i < e->files.size(); ++i) {
    if (e->files[i].path != p.path) continue;
    e->files[i] = p;
    emit fileChanged(id, static_cast<int>(i));
    return;
  }
}

void DownloadManager::onFinished(int id, int generation, const hub::DownloadResult& r) {
  DownloadEntry* e = find(id);
  if (!e || e->generation != generation) return;
  if (r.files.size() == e->files.size()) e->files = r.files;
  e->status = r.ok ? DownloadStatus::Done : r.cancelled ? DownloadStatus::Cancelled : DownloadStatus::Failed;
  if (e->status == DownloadStatus::Failed) {
    HubFailure f;
    f.message = QString::fromStdString(r.error);
    f.model_page = QString::fromStdString(e->client->model_page(e->repo_id.toStdString()));
    for (const auto& file : r.files)
      if (file.error) {
        f.kind = file.error;
        f.message = QStringLiteral("%1: %2").arg(QString::fromStdString(file.path),
                                                 QString::fromStdString(file.message));
        break;
      }
    e->failure = f;
  }
  for (size_t i = 0; i < e->files.size(); ++i) emit fileChanged(id, static_cast<int>(i));
  if (e->status == DownloadStatus::Done) addToModels(*e);
  emit changed(id);
  emit finished(id);
}

void DownloadManager::fail(DownloadEntry& e, const HubFailure& f) {
  e.status = DownloadStatus::Failed;
  e.failure = f;
  emit changed(e.id);
  emit finished(e.id);
}

void DownloadManager::addToModels(DownloadEntry& e) {
  if (!e.intent.add_to_models || !add_model_) return;
  const AddModelResult r = add_model_(e.snapshot_dir);
  e.model_id = r.ok ? r.id : 0;
  e.model_error = r.ok ? QString() : r.error;
}

void DownloadManager::pause(int id) {
  DownloadEntry* e = find(id);
  if (!e || e->status != DownloadStatus::Running || !e->download) return;
  e->download->pause();
  e->status = DownloadStatus::Paused;
  emit changed(id);
}

void DownloadManager::resume(int id) {
  DownloadEntry* e = find(id);
  if (!e) return;
  if (e->status == DownloadStatus::Paused && e->download) {
    e->download->resume();
    e->status = DownloadStatus::Running;
    emit changed(id);
    return;
  }
  if (e->status != DownloadStatus::Failed && e->status != DownloadStatus::Cancelled) return;
  ++e->generation;
  e->download.reset();  // finished: joins at once
  plan(*e);
}

void DownloadManager::cancel(int id) {
  DownloadEntry* e = find(id);
  if (!e || is_final(e->status)) return;
  if (!e->download) {  // still planning: its plan will be dropped
    ++e->generation;
    e->status = DownloadStatus::Cancelled;
    emit changed(id);
    emit finished(id);
    return;
  }
  e->download->cancel();  // the workers stop within a second; onFinished confirms
  e->status = DownloadStatus::Cancelled;
  emit changed(id);
}

bool DownloadManager::remove(int id) {
  const int index = indexOf(id);
  if (index < 0 || !is_final(entries_[index]->status)) return false;
  emit aboutToRemove(id);
  entries_.erase(entries_.begin() + index);
  emit removed(id);
  return true;
}

void DownloadManager::retryTokenFailures() {
  for (int id : ids())
    if (const DownloadEntry* e = entry(id);
        e && e->status == DownloadStatus::Failed && e->failure && e->failure->needsToken())
      resume(id);
}

QString format_speed(double bytes_per_s) {
  if (bytes_per_s <= 0) return {};
  if (bytes_per_s >= 1e6) return QStringLiteral("%1 MB/s").arg(bytes_per_s / 1e6, 0, 'f', 1);
  return QStringLiteral("%1 kB/s").arg(std::max(1.0, std::round(bytes_per_s / 1e3)), 0, 'f', 0);
}

QString format_eta(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return {};
  const qint64 s = static_cast<qint64>(std::ceil(seconds));
  if (s >= 3600) return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QChar('0'));
  if (s >= 60) return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60);
  return QStringLiteral("%1 s").arg(s);
}

}  // namespace inferdesk::gui
