// Streaming digests over OpenSSL's libcrypto (EVP): the SHA-256 the Hub lists for LFS files, and
// the git blob id (SHA-1 of "blob <size>\0" + content) it lists for every other file, so that every
// downloaded file is checked, not just the large ones.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace inferdesk::hub {

enum class DigestKind { Sha256, GitBlobSha1 };

class Digest {
 public:
  // `total_size` is needed up front by the git blob header; ignored for SHA-256.
  Digest(DigestKind kind, int64_t total_size);
  ~Digest();
  Digest(Digest&&) noexcept;
  Digest& operator=(Digest&&) noexcept;

  void update(const void* data, size_t size);
  // Lowercase hex; the digest cannot be updated afterwards.
  std::string finish();
  int64_t bytes() const { return bytes_; }

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
  int64_t bytes_ = 0;
};

// Feeds the first `length` bytes of `path` into `digest` (resuming a partial download). Throws
// HubError(Io) when the file cannot be read that far.
void digest_file_prefix(const std::filesystem::path& path, int64_t length, Digest& digest);

}  // namespace inferdesk::hub
