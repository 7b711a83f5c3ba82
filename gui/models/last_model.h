// The model to offer at the next start: which registry entry was loaded last, on which backend,
// with which context, and what to do about it at start (offer to load it again, load it, or
// nothing). Kept in the settings (keys "models/last" as JSON and "models/at_start"); an explicit
// unload forgets it, quitting with a model loaded does not.
#pragma once

#include <QString>

#include <optional>

namespace inferdesk::store {
class Settings;
}

namespace inferdesk::gui {

enum class StartupModel { Offer, Load, Nothing };

struct LastModel {
  qint64 id = 0;  // registry id
  QString name;
  QString backend;  // "cpu" / "cuda"
  int context = 0;  // tokens
};

class LastModelMemory {
 public:
  explicit LastModelMemory(store::Settings& settings) : settings_(settings) {}

  // Nullopt when none is remembered or the setting cannot be read (it is untrusted text).
  std::optional<LastModel> last() const;
  void remember(const LastModel& model);
  void forget();
  StartupModel policy() const;
  void setPolicy(StartupModel policy);

 private:
  store::Settings& settings_;
};

QString startupModelName(StartupModel policy);           // "offer" / "load" / "nothing"
StartupModel startupModelFromName(const QString& name);  // anything else: Offer

}  // namespace inferdesk::gui
