#include "gui/chat/sampling_json.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonValue>

#include <cmath>
#include <exception>
#include <functional>

namespace inferdesk::gui {

namespace {

constexpr double kMaxSeed = 9007199254740992.0;  // 2^53: the largest integer a JSON double keeps

// Reads one numeric field; `ok(value)` says whether it is in range.
template <typename T>
void read_number(const QJsonObject& o, const char* key, T& out, const std::function<bool(double)>& ok,
                 const char* range, QStringList& problems) {
  const QJsonValue v = o.value(QLatin1String(key));
  if (v.isUndefined() || v.isNull()) return;
  const double d = v.toDouble(std::nan(""));
  if (!v.isDouble() || !std::isfinite(d) || !ok(d)) {
    problems << QString("%1 must be %2 (found %3); using %4")
                    .arg(key, range,
                         QString::fromUtf8(QJsonDocument(QJsonObject{{key, v}}).toJson(QJsonDocument::Compact)))
                    .arg(static_cast<double>(out));
    return;
  }
  out = static_cast<T>(d);
}

bool is_integer(double d) { return std::floor(d) == d; }

}  // namespace

SamplingParams defaultChatSampling() {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_p = 0.95f;
  p.top_k = 40;
  p.min_p = 0.05f;
  p.repetition_penalty = 1.0f;
  p.max_tokens = 1024;
  return p;
}

QString samplingToJson(const SamplingParams& p) {
  QJsonObject o{{"temperature", static_cast<double>(p.temperature)},
                {"top_p", static_cast<double>(p.top_p)},
                {"top_k", p.top_k},
                {"min_p", static_cast<double>(p.min_p)},
                {"repetition_penalty", static_cast<double>(p.repetition_penalty)},
                {"max_tokens", p.max_tokens}};
  if (p.seed) o.insert("seed", static_cast<double>(*p.seed));
  if (p.presence_penalty != 0.0f) o.insert("presence_penalty", static_cast<double>(p.presence_penalty));
  if (p.frequency_penalty != 0.0f) o.insert("frequency_penalty", static_cast<double>(p.frequency_penalty));
  if (p.ignore_eos) o.insert("ignore_eos", true);
  return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

SamplingParams samplingFromJson(const QString& json, QStringList* problems_out) {
  QStringList problems;
  SamplingParams p = defaultChatSampling();
  const QString trimmed = json.trimmed();
  if (!trimmed.isEmpty()) {
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(trimmed.toUtf8(), &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject()) {
      problems << "the saved sampling settings are not a JSON object; using the defaults";
    } else {
      const QJsonObject o = doc.object();
      read_number(
          o, "temperature", p.temperature, [](double d) { return d >= 0 && d <= 100; }, "between 0 and 100", problems);
      read_number(
          o, "top_p", p.top_p, [](double d) { return d > 0 && d <= 1; }, "in (0, 1]", problems);
      read_number(
          o, "top_k", p.top_k, [](double d) { return is_integer(d) && d >= -1 && d <= 1e9; }, "an integer >= -1",
          problems);
      read_number(
          o, "min_p", p.min_p, [](double d) { return d >= 0 && d <= 1; }, "in [0, 1]", problems);
      read_number(
          o, "repetition_penalty", p.repetition_penalty, [](double d) { return d > 0 && d <= 100; }, "in (0, 100]",
          problems);
      read_number(
          o, "presence_penalty", p.presence_penalty, [](double d) { return d >= -2 && d <= 2; }, "in [-2, 2]",
          problems);
      read_number(
          o, "frequency_penalty", p.frequency_penalty, [](double d) { return d >= -2 && d <= 2; }, "in [-2, 2]",
          problems);
      read_number(
          o, "max_tokens", p.max_tokens, [](double d) { return is_integer(d) && d >= 1 && d <= 1e9; },
          "an integer >= 1", problems);
      const QJsonValue seed = o.value("seed");
      if (!seed.isUndefined() && !seed.isNull()) {
        const double d = seed.toDouble(-1);
        if (seed.isDouble() && is_integer(d) && d >= 0 && d <= kMaxSeed)
          p.seed = static_cast<uint64_t>(d);
        else
          problems << "seed must be a non-negative integer; using a random seed";
      }
      const QJsonValue ignore = o.value("ignore_eos");
      if (ignore.isBool()) p.ignore_eos = ignore.toBool();
    }
  }
  try {
    p.validate();
  } catch (const std::exception& e) {
    problems << QString("the saved sampling settings are invalid (%1); using the defaults").arg(e.what());
    p = defaultChatSampling();
  }
  if (problems_out) *problems_out = problems;
  return p;
}

}  // namespace inferdesk::gui
