#include "gui/models/last_model.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <exception>

#include "core/store/store.h"

namespace inferdesk::gui {

namespace {
constexpr const char* kLastKey = "models/last";
constexpr const char* kPolicyKey = "models/at_start";
}  // namespace

QString startupModelName(StartupModel policy) {
  switch (policy) {
    case StartupModel::Load: return "load";
    case StartupModel::Nothing: return "nothing";
    case StartupModel::Offer: break;
  }
  return "offer";
}

StartupModel startupModelFromName(const QString& name) {
  if (name == "load") return StartupModel::Load;
  if (name == "nothing") return StartupModel::Nothing;
  return StartupModel::Offer;
}

std::optional<LastModel> LastModelMemory::last() const {
  std::optional<std::string> text;
  try {
    text = settings_.get(kLastKey);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!text) return std::nullopt;
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(*text));
  if (!doc.isObject()) return std::nullopt;
  const QJsonObject o = doc.object();
  LastModel m;
  m.id = o.value("id").toInteger();
  m.name = o.value("name").toString();
  m.backend = o.value("backend").toString();
  m.context = o.value("context").toInt();
  if (m.id <= 0 || (m.backend != "cpu" && m.backend != "cuda") || m.context < 0) return std::nullopt;
  return m;
}

void LastModelMemory::remember(const LastModel& model) {
  const QJsonObject o{{"id", model.id}, {"name", model.name}, {"backend", model.backend}, {"context", model.context}};
  try {
    settings_.set(kLastKey, QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString());
  } catch (const std::exception&) {
    // A read-only database: nothing to offer next time.
  }
}

void LastModelMemory::forget() {
  try {
    settings_.remove(kLastKey);
  } catch (const std::exception&) {
  }
}

StartupModel LastModelMemory::policy() const {
  try {
    if (const auto v = settings_.get(kPolicyKey)) return startupModelFromName(QString::fromStdString(*v));
  } catch (const std::exception&) {
  }
  return StartupModel::Offer;
}

void LastModelMemory::setPolicy(StartupModel policy) {
  try {
    settings_.set(kPolicyKey, startupModelName(policy).toStdString());
  } catch (const std::exception&) {
  }
}

}  // namespace inferdesk::gui
