// Typed errors. Untrusted input (model files, tokenizers, templates, HTTP bodies, databases) is
// validated into an Error whose code says what kind of problem it is and whose message says what
// the user can do about it. Asserts are only for our own invariants.
#pragma once

#include <stdexcept>
#include <string>

namespace inferdesk {

enum class ErrorCode {
  InvalidArgument,  // a caller-supplied parameter is out of range (sampling params, CLI flags)
  NotFound,         // a file, tensor or entry that should exist does not
  Io,               // the OS refused a read/write/mmap
  Format,           // a file's contents are malformed (bad header, bad JSON, inconsistent shapes)
  Unsupported,      // well-formed but not something we support (pickle weights, unknown model_type)
  OutOfMemory,      // a request for memory that cannot be satisfied (KV blocks, device memory)
  Cancelled,        // the user cancelled the operation
  Template,         // a chat template failed to parse or raised
  Tokenizer,        // a tokenizer file is malformed or an id is out of range
  Internal,         // a bug of ours
};

const char* to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace inferdesk
