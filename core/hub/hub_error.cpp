#include "core/hub/hub_error.h"

namespace inferdesk::hub {

const char* to_string(HubErrorKind kind) {
  switch (kind) {
    case HubErrorKind::Network: return "network error";
    case HubErrorKind::Timeout: return "timeout";
    case HubErrorKind::ConnectionDropped: return "connection dropped";
    case HubErrorKind::Server: return "server error";
    case HubErrorKind::RateLimited: return "rate limited";
    case HubErrorKind::Unauthorized: return "unauthorized";
    case HubErrorKind::Gated: return "gated";
    case HubErrorKind::Forbidden: return "forbidden";
    case HubErrorKind::RepoNotFound: return "repository not found";
    case HubErrorKind::RevisionNotFound: return "revision not found";
    case HubErrorKind::EntryNotFound: return "file not found";
    case HubErrorKind::BadResponse: return "bad response";
    case HubErrorKind::SizeChanged: return "size changed";
    case HubErrorKind::Integrity: return "checksum mismatch";
    case HubErrorKind::Offline: return "offline";
    case HubErrorKind::DiskSpace: return "not enough disk space";
    case HubErrorKind::NotAllowed: return "not allowed";
    case HubErrorKind::Io: return "I/O error";
    case HubErrorKind::Cancelled: return "cancelled";
  }
  return "error";
}

ErrorCode error_code_for(HubErrorKind kind) {
  switch (kind) {
    case HubErrorKind::RepoNotFound:
    case HubErrorKind::RevisionNotFound:
    case HubErrorKind::EntryNotFound:
    case HubErrorKind::Offline: return ErrorCode::NotFound;
    case HubErrorKind::BadResponse:
    case HubErrorKind::SizeChanged:
    case HubErrorKind::Integrity: return ErrorCode::Format;
    case HubErrorKind::NotAllowed: return ErrorCode::Unsupported;
    case HubErrorKind::Unauthorized:
    case HubErrorKind::Gated:
    case HubErrorKind::Forbidden: return ErrorCode::InvalidArgument;
    case HubErrorKind::Cancelled: return ErrorCode::Cancelled;
    default: return ErrorCode::Io;
  }
}

HubError::HubError(HubErrorKind kind, const std::string& message, int http_status, std::optional<double> retry_after)
    : Error(error_code_for(kind), message), kind_(kind), http_status_(http_status), retry_after_(retry_after) {}

bool HubError::retryable() const noexcept {
  switch (kind_) {
    case HubErrorKind::Network:
    case HubErrorKind::Timeout:
    case HubErrorKind::ConnectionDropped:
    case HubErrorKind::Server:
    case HubErrorKind::RateLimited: return true;
    default: return false;
  }
}

}  // namespace inferdesk::hub
