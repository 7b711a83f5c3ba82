// Generation: the output side of one chat or completions request. Each choice (one engine
// request) turns engine tokens into text through its incremental detokenizer and StopMatcher, as
// vLLM's output processor does: a stop string ends the choice with the text before it (and the
// token that completed it counted), a stop token or EOS is counted but not detokenized, usage is
// the exact number of counted tokens. apply() returns what is new for the client.
// Not thread-safe: the server drives one instance from one strand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/server/api_error.h"
#include "core/server/generation_request.h"
#include "core/server/stop_matcher.h"
#include "core/tokenizer/tokenizer.h"

namespace inferdesk::server {

struct OutputToken {
  GeneratedToken token;
  std::string text;         // the token decoded alone (for logprobs; empty otherwise)
  int64_t text_offset = 0;  // completions logprobs: offset of this token in the choice's text
};

// What one engine event changed for one choice.
struct ChoiceDelta {
  int32_t index = 0;
  std::string text;                 // new output text
  std::vector<OutputToken> tokens;  // newly counted tokens
  std::string finish_reason;        // "" while running; "stop" | "length" | "abort"
  Json stop_reason;                 // null, the stop string, or the stop token id
  bool empty() const { return text.empty() && tokens.empty() && finish_reason.empty(); }
};

struct ChoiceOutput {
  std::string text;  // everything emitted so far
  std::vector<OutputToken> tokens;
  std::string finish_reason;
  Json stop_reason;
  bool done = false;
};

class Generation {
 public:
  // Keeps references to both: they must outlive the generation.
  Generation(const GenerationRequest& request, const Tokenizer* tokenizer);
  Generation(GenerationRequest&&, const Tokenizer*) = delete;

  struct Update {
    ChoiceDelta delta;
    bool cancel_engine = false;  // a stop string ended the choice: its engine request can stop
    bool cancelled = false;      // the engine cancelled it (shutdown, unload, disconnect)
    std::string error;           // the engine failed it
  };
  // Applies one engine event of choice `index` (0 <= index < num_choices).
  Update apply(int32_t index, const StreamEvent& event);

  bool done() const { return finished_ == choices_.size(); }
  size_t num_choices() const { return choices_.size(); }
  const ChoiceOutput& output(size_t index) const { return choices_[index].out; }
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t completion_tokens() const { return completion_tokens_; }

 private:
  struct Choice {
    std::optional<IncrementalDecoder> decoder;
    StopMatcher matcher;
    ChoiceOutput out;
    int64_t offset = 0;  // text_offset of the next token
  };
  std::string decode(Choice& c, int32_t id);
  void count(Choice& c, const GeneratedToken& t, Update& u);
  void finish(Choice& c, const StreamEvent& ev, Update& u);

  const GenerationRequest& request_;
  const Tokenizer* tokenizer_;
  std::vector<Choice> choices_;
  size_t finished_ = 0;
  int64_t prompt_tokens_ = 0;
  int64_t completion_tokens_ = 0;
};

}  // namespace inferdesk::server
