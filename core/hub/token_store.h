// Hub tokens: where they come from and where the app keeps one the user typed in. A token is a
// secret: it is never written to the SQLite database, never logged, and the file store keeps it in
// a 0600 file under the XDG config folder. The GUI adds a desktop secret-service store behind the
// same interface.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/hub/hub_env.h"

namespace inferdesk::hub {

class TokenStore {
 public:
  virtual ~TokenStore() = default;
  // The stored token, if any (surrounding whitespace removed).
  virtual std::optional<std::string> load() = 0;
  // Replaces the stored token. Throws HubError(Io) when it cannot be stored safely.
  virtual void save(const std::string& token) = 0;
  virtual void clear() = 0;
  // Where the token lives, for messages ("~/.config/inferdesk/hf-token").
  virtual std::string describe() const = 0;
};

// A 0600 file written atomically (temporary file + rename). load() refuses a file others can read.
class FileTokenStore : public TokenStore {
 public:
  explicit FileTokenStore(std::filesystem::path path);
  std::optional<std::string> load() override;
  void save(const std::string& token) override;
  void clear() override;
  std::string describe() const override { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// $XDG_CONFIG_HOME/inferdesk/hf-token (else ~/.config/inferdesk/hf-token).
std::filesystem::path default_token_store_path(const HubEnvironment& env);

enum class TokenSource { None, Explicit, Environment, HfTokenFile, AppStore };
const char* to_string(TokenSource s);

struct ResolvedToken {
  std::string token;  // "" when none
  TokenSource source = TokenSource::None;
};

// The token to send, first found: `explicit_token` (a --token flag), HF_TOKEN, huggingface_hub's
// token file ($HF_HOME/token, what `huggingface-cli login` writes), the app's store (may be null).
ResolvedToken resolve_token(const HubEnvironment& env, const std::string& explicit_token, TokenStore* app_store);

// Reads a token file as huggingface_hub does: whitespace and newlines removed; nullopt when missing
// or empty.
std::optional<std::string> read_token_file(const std::filesystem::path& path);

}  // namespace inferdesk::hub
