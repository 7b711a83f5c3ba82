// The published comparison (resources/reference/engine-comparison.json, built in as the Qt
// resource ":/reference/engine-comparison.json"): engines' quantization and hardware support,
// ease of setup and published figures, each with its source. Loaded at run time so a later
// edition is a data change; shown as "published, not measured here".
#pragma once

#include <QString>
#include <QStringList>

#include <vector>

namespace inferdesk::gui {

struct ReferenceSource {
  QString id, name, url;
};

struct ReferenceEngine {
  QString name, vendor, setup, latency, source;
  QStringList quantization, hardware;
};

struct ReferenceFigure {
  QString engine, model, metric, unit, gpu, conditions, source;
  QString value;  // as published ("~700", "600-650", "29,526 / 25,399 / ...")
};

struct ReferenceData {
  int edition = 0;
  std::vector<ReferenceSource> sources;
  std::vector<ReferenceEngine> engines;
  std::vector<ReferenceFigure> figures;
  QString error;  // set when the file could not be read; the rest is then empty

  const ReferenceSource* source(const QString& id) const;
  // Entries (engines and figures) whose source is missing or unknown, by a short description.
  QStringList entriesWithoutSource() const;
};

inline constexpr const char* kReferenceResource = ":/reference/engine-comparison.json";

ReferenceData load_reference(const QString& path = kReferenceResource);

}  // namespace inferdesk::gui
