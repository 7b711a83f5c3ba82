#include "core/hub/file_transfer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace inferdesk::hub {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

int64_t size_on_disk(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

TransferOutcome outcome_of(StopRequest s) {
  return s == StopRequest::Cancel ? TransferOutcome::Cancelled : TransferOutcome::Paused;
}

void write_all(int fd, const char* data, size_t n, const fs::path& path) {
  while (n > 0) {
    const ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const std::string why = errno == ENOSPC ? "the disk is full" : std::strerror(errno);
      throw HubError(HubErrorKind::Io, "cannot write " + path.string() + ": " + why);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

// "bytes 100-199/200" -> start 100, total 200.
bool parse_content_range(const std::string& v, int64_t& start, int64_t& total) {
  long long a = 0, b = 0, t = 0;
  if (std::sscanf(v.c_str(), "bytes %lld-%lld/%lld", &a, &b, &t) != 3) return false;
  start = a;
  total = t;
  return true;
}

std::string size_changed(const RepoFile& f, int64_t now) {
  return f.path + " changed size: the file list says " + std::to_string(f.size) + " bytes, the server now serves " +
         std::to_string(now) + "; nothing was saved under its name (start the download again to get the new version)";
}

}  // namespace

FileTransfer::FileTransfer(const HubClient& client, const HfCache& cache, std::string repo_id, std::string commit,
                           RepoFile file, TransferOptions options)
    : client_(client),
      cache_(cache),
      repo_id_(std::move(repo_id)),
      commit_(std::move(commit)),
      file_(std::move(file)),
      options_(options) {}

void FileTransfer::link() { cache_.link_snapshot_file(repo_id_, commit_, file_.path, file_.etag()); }

TransferOutcome FileTransfer::run(TransferControl& control) {
  const fs::path blob = cache_.blob_path(repo_id_, file_.etag());
  std::error_code ec;
  if (fs::is_regular_file(blob, ec)) {  // another revision (or program) brought these bytes already
    link();
    control.report(FileState::Done, file_.size, 1, "already in the cache");
    return TransferOutcome::Reused;
  }
  cache_.prepare_repo(repo_id_);
  BlobLock lock(cache_.lock_path(repo_id_, file_.etag()));
  while (!lock.try_lock()) {
    control.report(FileState::Queued, hashed_, 1, "waiting: another program is downloading this file");
    if (!control.sleep_for(200ms)) return outcome_of(control.stop_requested());
  }
  if (fs::is_regular_file(blob, ec)) {  // the other program finished it while we waited
    link();
    control.report(FileState::Done, file_.size, 1, "already in the cache");
    return TransferOutcome::Reused;
  }
  return run_locked(control);
}

TransferOutcome FileTransfer::run_locked(TransferControl& control) {
  int failures = 0, integrity_failures = 0, attempt = 1;
  while (true) {
    if (control.stop_requested() != StopRequest::None) return outcome_of(control.stop_requested());
    const int64_t before = size_on_disk(cache_.incomplete_path(repo_id_, file_.etag()));
    try {
      download_once(control, attempt);
      if (control.stop_requested() != StopRequest::None) return outcome_of(control.stop_requested());
      verify_and_commit(control, attempt);
      return TransferOutcome::Done;
    } catch (const HubError& e) {
      if (e.kind() == HubErrorKind::Integrity && integrity_failures < options_.integrity_retries) {
        ++integrity_failures;
        control.report(FileState::Connecting, 0, ++attempt, std::string(e.what()) + "; downloading it again");
        continue;
      }
      if (control.stop_requested() != StopRequest::None) return outcome_of(control.stop_requested());
      if (!e.retryable()) throw;
      // An attempt that moved bytes resets the count: a flaky but working link keeps going.
      failures = hashed_ > before ? 1 : failures + 1;
      if (failures >= options_.retry.max_attempts)
        throw HubError(e.kind(), std::string(e.what()) + " (gave up after " + std::to_string(failures) + " attempts)",
                       e.http_status());
      const auto delay = retry_delay(options_.retry, failures, e.retry_after());
      char wait[32];
      std::snprintf(wait, sizeof wait, "%.1f s", static_cast<double>(delay.count()) / 1000.0);
      control.report(FileState::Connecting, hashed_, ++attempt, std::string("retrying in ") + wait + ": " + e.what());
      if (!control.sleep_for(delay)) return outcome_of(control.stop_requested());
    }
  }
}

void FileTransfer::prepare_digest(int64_t on_disk) {
  if (digest_ && hashed_ == on_disk) return;  // paused or retried in this process: the digest is current
  digest_ = std::make_unique<Digest>(file_.lfs ? DigestKind::Sha256 : DigestKind::GitBlobSha1, file_.size);
  hashed_ = 0;
  if (on_disk > 0) digest_file_prefix(cache_.incomplete_path(repo_id_, file_.etag()), on_disk, *digest_);
  hashed_ = on_disk;
}

void FileTransfer::download_once(TransferControl& control, int attempt) {
  control.report(FileState::Connecting, hashed_, attempt, "");
  const FileMetadata meta = client_.file_metadata(repo_id_, commit_, file_.path);
  if (meta.size != file_.size) throw HubError(HubErrorKind::SizeChanged, size_changed(file_, meta.size));
  if (meta.etag != file_.etag() || meta.commit != commit_)
    throw HubError(HubErrorKind::BadResponse, "the Hub describes " + file_.path + " of " + commit_ +
                                                  " differently now (etag " + meta.etag + ", commit " + meta.commit +
                                                  ")");
  const fs::path part = cache_.incomplete_path(repo_id_, file_.etag());
  int64_t on_disk = size_on_disk(part);
  if (on_disk > file_.size) {  // longer than the file can be: not a prefix of it
    fs::resize_file(part, 0);
    on_disk = 0;
  }
  prepare_digest(on_disk);
  if (hashed_ == file_.size) return;
  Fd fd{open(part.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666)};
  if (fd.fd < 0) throw HubError(HubErrorKind::Io, "cannot write " + part.string() + ": " + std::strerror(errno));
  HttpRequest req;
  req.url = meta.location;
  req.headers = client_.headers_for(meta.location);
  req.follow_redirects = true;
  if (hashed_ > 0) req.headers.push_back("Range: bytes=" + std::to_string(hashed_) + "-");
  BodySink sink;
  sink.on_headers = [&](long status, const HttpHeaders& h) {
    if (status == 206) {
      int64_t start = -1, total = -1;
      if (!parse_content_range(h.get("Content-Range").value_or(""), start, total) || start != hashed_)
        throw HubError(HubErrorKind::BadResponse, "asked for " + file_.path + " from byte " + std::to_string(hashed_) +
                                                      ", got " + h.get("Content-Range").value_or("no Content-Range"));
      if (total != file_.size) throw HubError(HubErrorKind::SizeChanged, size_changed(file_, total));
    } else if (status == 200) {
      const auto length = h.get("Content-Length");
      if (length && std::atoll(length->c_str()) != file_.size)
        throw HubError(HubErrorKind::SizeChanged, size_changed(file_, std::atoll(length->c_str())));
      if (hashed_ > 0) {  // the server ignored the Range: start over
        if (ftruncate(fd.fd, 0) != 0) throw HubError(HubErrorKind::Io, "cannot truncate " + part.string());
        digest_ = std::make_unique<Digest>(file_.lfs ? DigestKind::Sha256 : DigestKind::GitBlobSha1, file_.size);
        hashed_ = 0;
      }
    } else {
      HttpResponse r;
      r.status = status;
      r.headers = h;
      throw http_error(r, client_, repo_id_, file_.path);
    }
    control.report(FileState::Downloading, hashed_, attempt, "");
    return true;
  };
  sink.on_data = [&](const char* data, size_t n) {
    if (hashed_ + static_cast<int64_t>(n) > file_.size)
      throw HubError(HubErrorKind::SizeChanged, size_changed(file_, hashed_ + static_cast<int64_t>(n)));
    write_all(fd.fd, data, n, part);
    digest_->update(data, n);
    hashed_ += static_cast<int64_t>(n);
    control.report(FileState::Downloading, hashed_, attempt, "");
    return true;
  };
  sink.keep_going = [&] { return control.stop_requested() == StopRequest::None; };
  const HttpResponse r = http_stream(client_.options().http, req, sink);
  if (r.aborted) return;
  if (hashed_ < file_.size)
    throw HubError(HubErrorKind::ConnectionDropped, "the connection closed after " + std::to_string(hashed_) + " of " +
                                                        std::to_string(file_.size) + " bytes of " + file_.path);
}

void FileTransfer::verify_and_commit(TransferControl& control, int attempt) {
  control.report(FileState::Verifying, hashed_, attempt, "");
  const fs::path part = cache_.incomplete_path(repo_id_, file_.etag());
  const std::string got = digest_->finish();
  digest_.reset();
  hashed_ = 0;
  const std::string& want = file_.lfs ? file_.lfs->sha256 : file_.oid;
  std::error_code ec;
  if (got != want) {
    fs::remove(part, ec);  // proved wrong: resuming from it could never verify
    throw HubError(HubErrorKind::Integrity,
                   file_.path + ": the downloaded bytes hash to " + got + " but the Hub lists " + want +
                       (file_.lfs ? " (SHA-256)" : " (git blob id)") + "; the partial file was deleted");
  }
  {
    Fd fd{open(part.c_str(), O_RDONLY | O_CLOEXEC)};
    // On disk before it gets its final name: a crash after the rename cannot leave a short blob.
    if (fd.fd < 0 || fsync(fd.fd) != 0) throw HubError(HubErrorKind::Io, "cannot flush " + part.string());
  }
  fs::rename(part, cache_.blob_path(repo_id_, file_.etag()), ec);
  if (ec) throw HubError(HubErrorKind::Io, "cannot move " + part.string() + " into place: " + ec.message());
  link();
  control.report(FileState::Done, file_.size, attempt, "");
}

}  // namespace inferdesk::hub
