#include "gui/dashboard/reference_data.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

// A Qt resource in a static library is registered only when asked for by name (outside any
// namespace, as Q_INIT_RESOURCE requires).
static void register_dashboard_resources() { Q_INIT_RESOURCE(dashboard); }

namespace inferdesk::gui {
namespace {

QStringList strings(const QJsonValue& v) {
  QStringList out;
  for (const QJsonValue& s : v.toArray()) out << s.toString();
  return out;
}

QString number_text(double v) { return QLocale(QLocale::English).toString(v, 'f', v == int(v) ? 0 : 1); }

// "~700", "600–650", or a table's points "128/128: 29,526 · ...".
QString value_text(const QJsonObject& f) {
  if (f.contains("points")) {
    QStringList parts;
    for (const QJsonValue& p : f["points"].toArray()) {
      const QJsonObject o = p.toObject();
      parts << QString("%1/%2: %3").arg(o["in"].toInt()).arg(o["out"].toInt()).arg(number_text(o["value"].toDouble()));
    }
    return parts.join(" \u00b7 ");
  }
  QString v = number_text(f["value"].toDouble());
  if (f.contains("value_min")) v = number_text(f["value_min"].toDouble()) + "\u2013" + v;
  return (f["approx"].toBool() ? "~" : "") + v;
}

}  // namespace

const ReferenceSource* ReferenceData::source(const QString& id) const {
  for (const auto& s : sources)
    if (s.id == id) return &s;
  return nullptr;
}

QStringList ReferenceData::entriesWithoutSource() const {
  QStringList missing;
  for (const auto& e : engines)
    if (!source(e.source)) missing << "engine " + e.name;
  for (const auto& f : figures)
    if (!source(f.source)) missing << "figure " + f.engine + " " + f.metric;
  for (const auto& s : sources)
    if (s.name.isEmpty() || s.url.isEmpty()) missing << "source " + s.id;
  return missing;
}

ReferenceData load_reference(const QString& path) {
  ReferenceData d;
  register_dashboard_resources();
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    d.error = QObject::tr("could not open %1: %2").arg(path, file.errorString());
    return d;
  }
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &err);
  if (!doc.isObject()) {
    d.error = QObject::tr("%1 is not a JSON object (%2)").arg(path, err.errorString());
    return d;
  }
  const QJsonObject root = doc.object();
  d.edition = root["edition"].toInt();
  const QJsonObject sources = root["sources"].toObject();
  for (auto it = sources.begin(); it != sources.end(); ++it) {
    const QJsonObject s = it.value().toObject();
    d.sources.push_back({it.key(), s["name"].toString(), s["url"].toString()});
  }
  for (const QJsonValue& v : root["engines"].toArray()) {
    const QJsonObject e = v.toObject();
    d.engines.push_back({e["name"].toString(), e["vendor"].toString(), e["setup"].toString(), e["latency"].toString(),
                         e["source"].toString(), strings(e["quantization"]), strings(e["hardware"])});
  }
  for (const QJsonValue& v : root["figures"].toArray()) {
    const QJsonObject f = v.toObject();
    d.figures.push_back({f["engine"].toString(), f["model"].toString(), f["metric"].toString(), f["unit"].toString(),
                         f["gpu"].toString(), f["conditions"].toString(), f["source"].toString(), value_text(f)});
  }
  return d;
}

}  // namespace inferdesk::gui
