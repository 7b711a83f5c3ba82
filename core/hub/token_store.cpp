#include "core/hub/token_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/hub/hub_error.h"

namespace inferdesk::hub {

namespace {

std::string clean(std::string s) {
  std::string out;
  for (char c : s)
    if (c != '\r' && c != '\n' && c != ' ' && c != '\t') out += c;
  return out;
}

}  // namespace

std::optional<std::string> read_token_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string t = clean(ss.str());
  if (t.empty()) return std::nullopt;
  return t;
}

FileTokenStore::FileTokenStore(std::filesystem::path path) : path_(std::move(path)) {}

std::optional<std::string> FileTokenStore::load() {
  struct stat st {};
  if (stat(path_.c_str(), &st) != 0) return std::nullopt;
  // A token others can read may already be leaked; refusing it makes the user notice.
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    throw HubError(HubErrorKind::Io, path_.string() + " is readable by other users: run chmod 600 on it, "
                                                      "or save the token again");
  return read_token_file(path_);
}

void FileTokenStore::save(const std::string& token) {
  const std::string t = clean(token);
  if (t.empty()) throw HubError(HubErrorKind::Io, "refusing to store an empty token");
  std::error_code ec;
  std::filesystem::create_directories(path_.parent_path(), ec);
  chmod(path_.parent_path().c_str(), 0700);
  const std::filesystem::path tmp = path_.string() + ".tmp" + std::to_string(getpid());
  // O_EXCL + 0600 from the start: there is no moment when the secret sits in a readable file.
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw HubError(HubErrorKind::Io, "cannot write " + tmp.string());
  const std::string body = t + "\n";
  const bool ok = write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size()) && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path_.c_str()) != 0) {
    unlink(tmp.c_str());
    throw HubError(HubErrorKind::Io, "cannot write " + path_.string());
  }
}

void FileTokenStore::clear() {
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

std::filesystem::path default_token_store_path(const HubEnvironment& env) {
  return inferdesk_config_dir(env) / "hf-token";
}

const char* to_string(TokenSource s) {
  switch (s) {
    case TokenSource::None: return "none";
    case TokenSource::Explicit: return "--token";
    case TokenSource::Environment: return "HF_TOKEN";
    case TokenSource::HfTokenFile: return "huggingface_hub token file";
    case TokenSource::AppStore: return "InferDesk's token store";
  }
  return "none";
}

ResolvedToken resolve_token(const HubEnvironment& env, const std::string& explicit_token, TokenStore* app_store) {
  if (const std::string t = clean(explicit_token); !t.empty()) return {t, TokenSource::Explicit};
  if (const std::string t = clean(env.hf_token); !t.empty()) return {t, TokenSource::Environment};
  if (auto t = read_token_file(hf_token_file(env))) return {*t, TokenSource::HfTokenFile};
  if (app_store)
    if (auto t = app_store->load()) return {*t, TokenSource::AppStore};
  return {};
}

}  // namespace inferdesk::hub
