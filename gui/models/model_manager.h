// ModelManager: the model manager's logic, without widgets (ModelsPage is its view; tests drive it
// directly). Adds local Hugging Face folders to the store's registry after validating them,
// estimates memory (weights + KV cache for a chosen context + activations) before a load and
// refuses one that will not fit, and asks the EngineController to load / unload.
#pragma once

#include <QObject>
#include <QString>

#include <map>
#include <optional>

#include "core/engine/model_info.h"
#include "gui/app/app_context.h"
#include "gui/engine/engine_controller.h"
#include "gui/models/last_model.h"
#include "gui/models/model_facts.h"
#include "gui/models/model_table_model.h"

namespace inferdesk::gui {

struct AddModelResult {
  bool ok = false;
  qint64 id = 0;
  bool updated = false;  // the folder was already registered (its record was refreshed)
  ModelFacts facts;
  QString error;  // why the folder was refused
};

struct MemoryCheck {
  bool fits = false;
  qint64 context = 0;  // tokens the estimate is for
  qint64 weights = 0;
  qint64 kv_cache = 0;
  qint64 activations = 0;
  qint64 required = 0;   // total
  qint64 available = 0;  // the budget compared with (0: unknown, then it is assumed to fit)
  QString where;         // "RAM" or "GPU memory"
  QString summary;       // one line: "needs 1.20 GiB (weights .. + KV cache .. ) of 60 GiB RAM"
  QString reason;        // why it does not fit ("" when it fits)
};

class ModelManager : public QObject {
  Q_OBJECT

 public:
  ModelManager(AppContext& ctx, QObject* parent = nullptr);

  ModelTableModel* table() { return &table_; }
  AppContext& context() { return ctx_; }

  // Re-reads the registry into the table.
  void reload();
  // Validates `path` and registers it (the code path behind the "Add folder" dialog).
  AddModelResult addFolder(const QString& path);
  // Removes a model from the registry (refused while it is loaded). Returns false with *error.
  bool removeModel(qint64 id, QString* error = nullptr);

  // Memory this backend can give a model now: RAM (MemAvailable) for "cpu", free memory of
  // GPU 0 for "cuda"; 0 when unknown.
  static qint64 availableMemory(const QString& backend);
  // Estimates memory for `context` tokens (0: the model's context length) on `backend` and
  // compares it with `budget` (nullopt: availableMemory(backend)).
  // precision: FP8 on load counts the projections at one byte, an FP8 KV cache one byte a value
  // (on CUDA; the CPU's cache stays float32).
  MemoryCheck checkMemory(qint64 id, const QString& backend, qint64 context,
                          std::optional<qint64> budget = std::nullopt, LoadPrecision precision = {});
  static MemoryCheck checkMemory(const ModelInfo& info, const QString& backend, qint64 context, qint64 budget,
                                 LoadPrecision precision = {});

  // Checks memory (refusing with *reason when it will not fit) and asks the engine to load the
  // model; progress and the result arrive through the controller's signals (the table's Status
  // column follows them). Returns false without touching the engine when refused.
  bool load(qint64 id, const QString& backend, qint64 context, QString* reason = nullptr,
            std::optional<qint64> budget = std::nullopt, LoadPrecision precision = {});
  // Unloads (the user's choice: the model is no longer offered at the next start).
  void unload();
  void cancelLoad();
  // What was loaded last (for the offer at start); see last_model.h.
  LastModelMemory& lastModel() { return last_; }
  // The registry id of the loaded (or loading) model; 0 when none.
  qint64 loadedId() const { return loaded_id_; }

 signals:
  void statusMessage(const QString& text);

 private:
  const ModelInfo& info(const QString& path);  // cached inspect_model_folder; throws Error
  ModelRow rowFor(qint64 id, const QString& name, const QString& path, const QString& info_json);

  AppContext& ctx_;
  ModelTableModel table_;
  std::map<QString, ModelInfo> info_cache_;
  qint64 loading_id_ = 0;
  qint64 loaded_id_ = 0;
  QString loading_backend_;
  int loading_context_ = 0;
  QString loaded_name_;
  LastModelMemory last_;
};

}  // namespace inferdesk::gui
