// Errors of the Hub client and the downloader. A HubError is an inferdesk::Error (so callers that
// only know Error still get a code and a message a user can act on) with a finer kind that the
// downloader's retry policy and the GUI use: whether to retry, whether to ask for a token.
#pragma once

#include <optional>
#include <string>

#include "core/util/error.h"

namespace inferdesk::hub {

enum class HubErrorKind {
  Network,            // the host could not be resolved or reached, TLS failed
  Timeout,            // connecting or a stalled transfer timed out
  ConnectionDropped,  // the connection closed before the whole body arrived
  Server,             // HTTP 5xx
  RateLimited,        // HTTP 429 (retry_after() holds the server's Retry-After, when given)
  Unauthorized,       // HTTP 401: missing or invalid token
  Gated,              // HTTP 401/403 with X-Error-Code: GatedRepo
  Forbidden,          // HTTP 403 for another reason
  RepoNotFound,       // HTTP 404 (or 401) with X-Error-Code: RepoNotFound
  RevisionNotFound,   // X-Error-Code: RevisionNotFound
  EntryNotFound,      // X-Error-Code: EntryNotFound, or a 404 on a file
  BadResponse,        // a reply we cannot use: malformed JSON, a missing header, too large a body
  SizeChanged,        // the file's size differs from the one the file list gave
  Integrity,          // the downloaded bytes do not hash to the listed SHA-256 / git oid
  Offline,            // HF_HUB_OFFLINE=1 and the cache cannot answer
  DiskSpace,          // not enough free space for what is left to download
  NotAllowed,         // the file is outside the allow-list (pickle weights)
  Io,                 // the local file system refused a write, rename or symlink
  Cancelled,          // the caller cancelled
};

const char* to_string(HubErrorKind kind);

class HubError : public Error {
 public:
  HubError(HubErrorKind kind, const std::string& message, int http_status = 0,
           std::optional<double> retry_after = std::nullopt);
  HubErrorKind kind() const noexcept { return kind_; }
  int http_status() const noexcept { return http_status_; }
  // Seconds the server asked us to wait (Retry-After), when it did.
  std::optional<double> retry_after() const noexcept { return retry_after_; }
  // Network trouble, 5xx and 429 may pass; every other kind fails the same way again.
  bool retryable() const noexcept;

 private:
  HubErrorKind kind_;
  int http_status_;
  std::optional<double> retry_after_;
};

// The inferdesk::ErrorCode a kind maps to (NotFound for the 404s, Io for network and disk, ...).
ErrorCode error_code_for(HubErrorKind kind);

}  // namespace inferdesk::hub
