#include "core/util/error.h"

namespace inferdesk {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "invalid argument";
    case ErrorCode::NotFound: return "not found";
    case ErrorCode::Io: return "I/O error";
    case ErrorCode::Format: return "format error";
    case ErrorCode::Unsupported: return "unsupported";
    case ErrorCode::OutOfMemory: return "out of memory";
    case ErrorCode::Cancelled: return "cancelled";
    case ErrorCode::Template: return "template error";
    case ErrorCode::Tokenizer: return "tokenizer error";
    case ErrorCode::Internal: return "internal error";
  }
  return "error";
}

}  // namespace inferdesk
