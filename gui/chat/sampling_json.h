// Sampling settings of a chat as JSON: what the chat page stores in store::Chat::sampling_json and
// in named presets (store::Settings presets). The text comes from the database, so reading it is
// reading untrusted input: unknown keys are ignored, a field of the wrong type or out of range
// falls back to the chat default and is reported in `problems`, nothing throws.
//
//   {"temperature":0.7,"top_p":0.95,"top_k":40,"min_p":0.05,"repetition_penalty":1.0,
//    "max_tokens":1024,"seed":42}          ("seed" absent or null: a random seed per reply)
//
// Fields the panel does not show (presence_penalty, frequency_penalty, ignore_eos) are kept when
// present, so a chat configured elsewhere keeps its settings.
#pragma once

#include <QString>
#include <QStringList>

#include "core/sample/sampling_params.h"

namespace inferdesk::gui {

// The settings a new chat starts with (moderate sampling, replies of up to 1024 tokens).
SamplingParams defaultChatSampling();

// Compact JSON of the fields above (seed only when set; hidden fields only when not default).
QString samplingToJson(const SamplingParams& params);

// Parses `json`; an empty string or "{}" gives the defaults. Every field that could not be used
// adds a sentence to *problems (when given).
SamplingParams samplingFromJson(const QString& json, QStringList* problems = nullptr);

}  // namespace inferdesk::gui
