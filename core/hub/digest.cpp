#include "core/hub/digest.h"

#include <openssl/evp.h>

#include <fstream>
#include <vector>

#include "core/hub/hub_error.h"

namespace inferdesk::hub {

struct Digest::Ctx {
  EVP_MD_CTX* md = nullptr;
  ~Ctx() {
    if (md) EVP_MD_CTX_free(md);
  }
};

Digest::Digest(DigestKind kind, int64_t total_size) : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  const EVP_MD* md = kind == DigestKind::Sha256 ? EVP_sha256() : EVP_sha1();
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, md, nullptr) != 1)
    throw Error(ErrorCode::Internal, "OpenSSL could not start a digest");
  if (kind == DigestKind::GitBlobSha1) {
    const std::string header = "blob " + std::to_string(total_size) + std::string(1, '\0');
    EVP_DigestUpdate(ctx_->md, header.data(), header.size());
  }
}

Digest::~Digest() = default;
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;

void Digest::update(const void* data, size_t size) {
  if (!ctx_ || !ctx_->md) throw Error(ErrorCode::Internal, "digest updated after finish()");
  EVP_DigestUpdate(ctx_->md, data, size);
  bytes_ += static_cast<int64_t>(size);
}

std::string Digest::finish() {
  if (!ctx_ || !ctx_->md) throw Error(ErrorCode::Internal, "digest finished twice");
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_->md, out, &len);
  EVP_MD_CTX_free(ctx_->md);
  ctx_->md = nullptr;
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned int i = 0; i < len; ++i) {
    s += hex[out[i] >> 4];
    s += hex[out[i] & 15];
  }
  return s;
}

void digest_file_prefix(const std::filesystem::path& path, int64_t length, Digest& digest) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw HubError(HubErrorKind::Io, "cannot read " + path.string());
  std::vector<char> buf(1 << 20);
  int64_t left = length;
  while (left > 0) {
    const auto want = static_cast<std::streamsize>(std::min<int64_t>(left, static_cast<int64_t>(buf.size())));
    in.read(buf.data(), want);
    if (in.gcount() != want) throw HubError(HubErrorKind::Io, "cannot read " + path.string() + " back");
    digest.update(buf.data(), static_cast<size_t>(want));
    left -= want;
  }
}

}  // namespace inferdesk::hub
