#include "gui/hub/fit_check.h"

#include <algorithm>

#include "gui/engine/backends.h"
#include "gui/models/model_facts.h"
#include "gui/models/model_manager.h"

namespace inferdesk::gui {

MachineMemory MachineMemory::probe() {
  MachineMemory m;
  const CudaStatus cuda = cuda_status();
  m.gpu_usable = cuda.usable;
  m.gpu_reason = cuda.reason;
  m.gpu_name = cuda.devices.isEmpty() ? QString() : cuda.devices.front();
  m.gpu_free = cuda.free_memory;
  m.ram_available = ModelManager::availableMemory("cpu");
  return m;
}

QString fit_text(Fit f) {
  switch (f) {
    case Fit::Gpu: return QObject::tr("fits on your GPU");
    case Fit::RamOnly: return QObject::tr("fits in RAM only");
    case Fit::None: return QObject::tr("does not fit");
    case Fit::Unknown: break;
  }
  return QObject::tr("cannot tell");
}

std::vector<qint64> fit_contexts(qint64 max_context) {
  std::vector<qint64> out;
  for (qint64 c : {qint64(4096), qint64(32768), qint64(131072)})
    if (max_context <= 0 || c < max_context) out.push_back(c);
  if (max_context > 0) out.push_back(max_context);
  return out;
}

ModelInfo hub_model_info(const ModelConfig& config, qint64 params, qint64 file_bytes) {
  ModelInfo info;
  info.config = config;
  info.params_total = params;
  info.params_active = params;
  info.weight_bytes = file_bytes;
  info.context_length = config.max_position_embeddings;
  return info;
}

qint64 variant_weight_bytes(const ModelConfig& config, qint64 params, const RepoVariant& v, bool cuda) {
  return backend_weight_bytes(config, params, v.file_bytes, v.format == VariantFormat::Fp8, cuda, v.quantize_on_load);
}

namespace {

// Bytes the variant needs with `context` tokens on a backend. Unquantized weights go through the
// model manager's own check (the very numbers its Load button compares); FP8 weights, which that
// check does not know yet, through the same estimate with their one-byte projections.
qint64 required_bytes(const ModelConfig& config, qint64 params, const RepoVariant& v, qint64 context, bool cuda) {
  if (v.format == VariantFormat::Unquantized && !v.quantize_on_load)
    return ModelManager::checkMemory(hub_model_info(config, params, v.file_bytes), cuda ? "cuda" : "cpu", context, 0)
        .required;
  return estimate_memory(config, variant_weight_bytes(config, params, v, cuda), context,
                         cuda ? DType::BF16 : DType::F32)
      .total;
}

}  // namespace

FitCell check_fit(const ModelConfig& config, qint64 params, const RepoVariant& v, qint64 context,
                  const MachineMemory& machine) {
  FitCell c;
  c.context = context;
  if (!v.runnable) {
    c.detail = v.note;
    return c;
  }
  c.ram_bytes = required_bytes(config, params, v, context, false);
  c.gpu_bytes = required_bytes(config, params, v, context, true);
  if (machine.gpu_usable && c.gpu_bytes <= machine.gpu_free)
    c.fit = Fit::Gpu;
  else if (machine.ram_available > 0 && c.ram_bytes <= machine.ram_available)
    c.fit = Fit::RamOnly;
  else
    c.fit = machine.ram_available > 0 ? Fit::None : Fit::Unknown;
  const QString gpu = machine.gpu_usable ? QObject::tr("on the GPU: needs %1 of %2 free")
                                               .arg(format_bytes(c.gpu_bytes), format_bytes(machine.gpu_free))
                                         : QObject::tr("on the GPU: needs %1; no usable GPU (%2)")
                                               .arg(format_bytes(c.gpu_bytes), machine.gpu_reason);
  c.detail = QObject::tr("%1 tokens of context\n%2\nin RAM: needs %3 of %4 available")
                 .arg(context)
                 .arg(gpu, format_bytes(c.ram_bytes), format_bytes(machine.ram_available));
  return c;
}

std::vector<FitRow> fit_table(const RepoOverview& o, const MachineMemory& machine) {
  std::vector<FitRow> rows;
  if (!o.config) return rows;
  const auto contexts = fit_contexts(o.config->max_position_embeddings);
  for (const RepoVariant& v : o.variants) {
    FitRow row{v, {}};
    for (qint64 ctx : contexts) row.cells.push_back(check_fit(*o.config, o.params, v, ctx, machine));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace inferdesk::gui
