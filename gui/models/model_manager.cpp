#include "gui/models/model_manager.h"

#include <QFile>
#include <QFileInfo>

#include <exception>

#include "core/store/store.h"
#include "core/util/error.h"
#include "gui/engine/backends.h"

namespace inferdesk::gui {

namespace {

QString message_of(const std::exception& e) { return QString::fromUtf8(e.what()); }

QString backend_label(const QString& backend) { return backend == "cuda" ? "CUDA" : "CPU"; }

}  // namespace

ModelManager::ModelManager(AppContext& ctx, QObject* parent) : QObject(parent), ctx_(ctx), last_(ctx.settings) {
  reload();
  EngineController* engine = ctx_.engine;
  if (!engine) return;
  connect(engine, &EngineController::loadProgress, this, [this](qint64 done, qint64 total) {
    if (loading_id_ == 0) return;
    const int pct = total > 0 ? static_cast<int>(100 * done / total) : 0;
    table_.setState(loading_id_, tr("loading %1%").arg(pct));
  });
  connect(engine, &EngineController::modelLoaded, this, [this](const ModelSummary& s) {
    loaded_id_ = loading_id_;
    loading_id_ = 0;
    if (loaded_id_ == 0) {  // loaded by someone else: find its row by path
      if (const auto e = ctx_.models.find_by_path(s.path.toStdString())) loaded_id_ = e->id;
    }
    loaded_name_ = s.name;
    if (loaded_id_ != 0) {
      table_.setState(loaded_id_, tr("loaded on %1").arg(backend_label(s.backend)));
      if (!ctx_.db.read_only()) {
        try {
          ctx_.models.touch_loaded(loaded_id_);
        } catch (const std::exception& e) {
          emit statusMessage(tr("could not record the load: %1").arg(message_of(e)));
        }
        last_.remember({loaded_id_, s.name, s.backend, s.context_length});
      }
    }
    emit statusMessage(tr("%1 loaded on %2 (context %3 tokens, %4 KV blocks)")
                           .arg(s.name, backend_label(s.backend))
                           .arg(s.context_length)
                           .arg(s.kv_blocks));
  });
  connect(engine, &EngineController::loadFailed, this, [this](const QString& msg, bool cancelled) {
    if (loading_id_ != 0) table_.setState(loading_id_, cancelled ? QString() : tr("failed"));
    loading_id_ = 0;
    emit statusMessage(cancelled ? tr("loading cancelled") : msg);
  });
  connect(engine, &EngineController::modelUnloaded, this, [this] {
    loaded_id_ = 0;
    if (loading_id_ == 0) table_.clearStates();
    if (!loaded_name_.isEmpty()) emit statusMessage(tr("%1 was unloaded; no model is loaded").arg(loaded_name_));
    loaded_name_.clear();
  });
}

void ModelManager::reload() {
  std::vector<ModelRow> rows;
  try {
    for (const auto& e : ctx_.models.list())
      rows.push_back(rowFor(e.id, QString::fromStdString(e.display_name), QString::fromStdString(e.path),
                            QString::fromStdString(e.info_json)));
  } catch (const std::exception& e) {
    emit statusMessage(tr("could not read the model list: %1").arg(message_of(e)));
  }
  table_.setRows(std::move(rows));
  if (loaded_id_ != 0) table_.setState(loaded_id_, tr("loaded"));
}

ModelRow ModelManager::rowFor(qint64 id, const QString& name, const QString& path, const QString& info_json) {
  ModelRow r;
  r.id = id;
  r.display_name = name;
  r.path = path;
  r.facts = ModelFacts::fromJson(info_json);
  return r;
}

const ModelInfo& ModelManager::info(const QString& path) {
  auto it = info_cache_.find(path);
  if (it == info_cache_.end()) it = info_cache_.emplace(path, inspect_model_folder(path.toStdString())).first;
  return it->second;
}

AddModelResult ModelManager::addFolder(const QString& path) {
  AddModelResult r;
  try {
    r.facts = inspect_model_facts(path);
    info_cache_.erase(r.facts.path);
    const bool existed = ctx_.models.find_by_path(r.facts.path.toStdString()).has_value();
    r.id = ctx_.models.add(r.facts.path.toStdString(), r.facts.name.toStdString(), r.facts.model_type.toStdString(),
                           r.facts.toJson().toStdString());
    r.updated = existed;
    r.ok = true;
    table_.upsert(rowFor(r.id, r.facts.name, r.facts.path, r.facts.toJson()));
    emit statusMessage(existed ? tr("%1 was already in the list; its details were refreshed").arg(r.facts.name)
                               : tr("added %1").arg(r.facts.name));
  } catch (const std::exception& e) {
    r = AddModelResult{};
    r.error = tr("%1 is not a model folder InferDesk can load: %2").arg(path, message_of(e));
    emit statusMessage(r.error);
  }
  return r;
}

bool ModelManager::removeModel(qint64 id, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    emit statusMessage(why);
    return false;
  };
  if (id == loaded_id_ || id == loading_id_) return fail(tr("unload the model before removing it"));
  try {
    ctx_.models.remove(id);
  } catch (const std::exception& e) {
    return fail(tr("could not remove the model: %1").arg(message_of(e)));
  }
  table_.remove(id);
  return true;
}

qint64 ModelManager::availableMemory(const QString& backend) {
  if (backend == "cuda") return cuda_status().free_memory;
  QFile f("/proc/meminfo");
  if (!f.open(QIODevice::ReadOnly)) return 0;
  for (const QByteArray& line : f.readAll().split('\n')) {
    if (!line.startsWith("MemAvailable:")) continue;
    const QList<QByteArray> parts = line.simplified().split(' ');
    if (parts.size() >= 2) return parts[1].toLongLong() * 1024;  // kB
  }
  return 0;
}

MemoryCheck ModelManager::checkMemory(const ModelInfo& info, const QString& backend, qint64 context, qint64 budget,
                                      LoadPrecision precision) {
  MemoryCheck m;
  m.context = context > 0 ? context : info.context_length;
  const bool cuda = backend == "cuda";
  // CPU keeps weights as stored (read in place) and a float32 cache; CUDA keeps BF16 weights and
  // a BF16 cache (E4M3 with an FP8 KV cache).
  const DType kv = !cuda ? DType::F32 : precision.kv_cache == KvCacheDtype::Fp8 ? DType::F8E4M3 : DType::BF16;
  const int64_t weights =
      precision.quantization == LoadQuantization::None
          ? backend_weight_bytes(info.config, info.params_total, info.weight_bytes,
                                 info.config.quantization.quantized(), cuda, false)
          : on_load_weight_bytes(info.config, info.params_total, info.weight_bytes,
                                 on_load_projection_bytes(precision.quantization), cuda);
  const MemoryEstimate e = estimate_memory(info.config, weights, m.context, kv);
  m.weights = e.weights;
  m.kv_cache = e.kv_cache;
  m.activations = e.activations;
  m.required = e.total;
  m.available = budget;
  m.where = cuda ? QObject::tr("GPU memory") : QObject::tr("RAM");
  m.fits = budget <= 0 || e.total <= budget;
  m.summary = QObject::tr("needs %1 (weights %2 + KV cache %3 for %4 tokens + activations %5)")
                  .arg(format_bytes(e.total), format_bytes(e.weights), format_bytes(e.kv_cache))
                  .arg(m.context)
                  .arg(format_bytes(e.activations));
  if (budget > 0) m.summary += QObject::tr("; %1 of %2 available").arg(format_bytes(budget), m.where);
  if (!m.fits) {
    m.reason = QObject::tr("it will not fit: %1 needs %2 but only %3 of %4 is available")
                   .arg(QString::fromStdString(info.config.model_type), format_bytes(e.total), format_bytes(budget),
                        m.where);
    if (e.kv_cache > 0 && e.weights + e.activations < budget)
      m.reason += QObject::tr(" (a shorter context needs less KV cache: %1 per token)")
                      .arg(format_bytes(e.kv_bytes_per_token));
  }
  return m;
}

MemoryCheck ModelManager::checkMemory(qint64 id, const QString& backend, qint64 context, std::optional<qint64> budget,
                                      LoadPrecision precision) {
  const ModelRow* row = table_.find(id);
  if (!row) {
    MemoryCheck m;
    m.reason = tr("no model with id %1 in the list").arg(id);
    return m;
  }
  try {
    return checkMemory(info(row->path), backend, context, budget ? *budget : availableMemory(backend), precision);
  } catch (const std::exception& e) {
    MemoryCheck m;
    m.reason = tr("cannot read %1: %2").arg(row->path, message_of(e));
    return m;
  }
}

bool ModelManager::load(qint64 id, const QString& backend, qint64 context, QString* reason,
                        std::optional<qint64> budget, LoadPrecision precision) {
  auto refuse = [&](const QString& why) {
    if (reason) *reason = why;
    emit statusMessage(why);
    return false;
  };
  const ModelRow* row = table_.find(id);
  if (!row) return refuse(tr("no model with id %1 in the list").arg(id));
  if (backend == "cuda" && !cuda_status().usable)
    return refuse(tr("CUDA is not available: %1").arg(cuda_status().reason));
  if (!ctx_.engine) return refuse(tr("there is no engine"));
  if (backend == "cuda" && (precision.quantization == LoadQuantization::Int8 ||
                            precision.quantization == LoadQuantization::Int4 || precision.kv_cache == KvCacheDtype::Int8))
    return refuse(tr("the CUDA backend runs no integer weights or 8-bit KV cache yet: choose the CPU backend, or FP8"));
  if (precision.quantization != LoadQuantization::None && row->facts && row->facts->quantization != "none" &&
      !row->facts->quantization.isEmpty())
    return refuse(
        tr("%1 is already quantized (%2): it loads as published").arg(row->display_name, row->facts->quantization));
  const MemoryCheck m = checkMemory(id, backend, context, budget, precision);
  if (!m.fits || !m.reason.isEmpty()) return refuse(tr("%1 was not loaded: %2").arg(row->display_name, m.reason));
  loading_id_ = id;
  loading_backend_ = backend;
  table_.setState(id, tr("loading…"));
  EngineController* engine = ctx_.engine;
  const QString path = row->path;
  const int ctx = static_cast<int>(std::min<qint64>(m.context, INT32_MAX));
  QMetaObject::invokeMethod(
      engine, [engine, path, backend, ctx, precision] { engine->loadModel(path, backend, ctx, 0, precision); },
      Qt::QueuedConnection);
  emit statusMessage(tr("loading %1 on %2…").arg(row->display_name, backend_label(backend)));
  return true;
}

void ModelManager::unload() {
  if (!ctx_.engine) return;
  if (!ctx_.db.read_only()) last_.forget();
  EngineController* engine = ctx_.engine;
  engine->cancelLoad();
  QMetaObject::invokeMethod(
      engine, [engine] { engine->unload(); }, Qt::QueuedConnection);
}

void ModelManager::cancelLoad() {
  if (ctx_.engine) ctx_.engine->cancelLoad();
}

}  // namespace inferdesk::gui
