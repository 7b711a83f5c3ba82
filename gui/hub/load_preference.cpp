#include "gui/hub/load_preference.h"

#include <exception>
#include <string>

#include "core/store/store.h"

namespace inferdesk::gui {

namespace {
std::string key_for(qint64 id) { return "models/" + std::to_string(id) + "/load_quantization"; }
}  // namespace

void set_load_quantization(store::Settings& settings, qint64 model_id, LoadQuantization q) {
  if (q == LoadQuantization::Fp8)
    settings.set(key_for(model_id), "fp8");
  else
    settings.remove(key_for(model_id));
}

LoadQuantization load_quantization(const store::Settings& settings, qint64 model_id) {
  try {
    return settings.get_or(key_for(model_id), "") == "fp8" ? LoadQuantization::Fp8 : LoadQuantization::None;
  } catch (const std::exception&) {
    return LoadQuantization::None;
  }
}

}  // namespace inferdesk::gui
