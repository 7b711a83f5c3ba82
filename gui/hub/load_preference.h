// The quantization chosen for a model in the download wizard's quantize step, kept in the settings
// table under "models/<registry id>/load_quantization" ("fp8"; absent: load as published), so the
// model manager's load dialog can offer it (core LoadOptions::quantization). It is a preference,
// not a secret, so SQLite is the right place.
#pragma once

#include <QtGlobal>

#include "core/engine/model_loader.h"

namespace inferdesk::store {
class Settings;
}

namespace inferdesk::gui {

void set_load_quantization(store::Settings& settings, qint64 model_id, LoadQuantization q);
// None when nothing (or something unreadable) is recorded.
LoadQuantization load_quantization(const store::Settings& settings, qint64 model_id);

}  // namespace inferdesk::gui
