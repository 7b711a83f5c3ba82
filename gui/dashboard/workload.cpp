#include "gui/dashboard/workload.h"

#include <QStringList>

namespace inferdesk::gui {

std::vector<WorkloadPreset> workload_presets() {
  auto make = [](const char* name, int in, int out, int n, std::vector<int> c) {
    WorkloadSpec w;
    w.preset = name;
    w.input_len = in;
    w.output_len = out;
    w.requests_per_point = n;
    w.concurrencies = std::move(c);
    return WorkloadPreset{name, w};
  };
  return {
      make("Chat 550/150", 550, 150, 32, {1, 4, 16}),
      make("Long prompt 2,048/128", 2048, 128, 32, {1, 4, 16}),
      make("Offline 128/128 (max concurrency)", 128, 128, 256, {0}),
      make("Sweep 1\u2192256 (128/128)", 128, 128, 64, {1, 2, 4, 8, 16, 32, 64, 128, 256}),
  };
}

nlohmann::json to_json(const WorkloadSpec& w) {
  return {{"dataset", "random"},         {"preset", w.preset.toStdString()}, {"input_len", w.input_len},
          {"output_len", w.output_len},  {"num_prompts", w.requests_per_point},
          {"max_concurrency", w.concurrencies}, {"seed", w.seed}, {"token_id_max", w.token_id_max},
          {"ignore_eos", true}};
}

std::vector<int> parse_concurrencies(const QString& text) {
  std::vector<int> out;
  for (const QString& part : text.split(',', Qt::SkipEmptyParts)) {
    bool ok = false;
    const int v = part.trimmed().toInt(&ok);
    if (!ok || v < 0 || v > 100000) return {};
    out.push_back(v);
  }
  return out;
}

QString concurrencies_text(const std::vector<int>& c) {
  QStringList parts;
  for (int v : c) parts << QString::number(v);
  return parts.join(", ");
}

}  // namespace inferdesk::gui
