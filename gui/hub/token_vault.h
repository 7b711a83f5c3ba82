// TokenVault: where the Hugging Face token typed into the app is kept. The desktop's secret service
// (QtKeychain: GNOME Keyring / KWallet over the Secret Service API) where one answers; otherwise
// core/hub's FileTokenStore, a 0600 file under $XDG_CONFIG_HOME/inferdesk/ that inferdesk-cli also
// reads. Never the SQLite database, never a log line.
//
// Both places sit behind SecretBackend, whose calls answer through a callback (QtKeychain's jobs
// are asynchronous: the keyring may ask the user to unlock it), so the vault never blocks the UI
// thread; tests pass backends of their own.
#pragma once

#include <QObject>
#include <QString>

#include <filesystem>
#include <functional>
#include <memory>

namespace inferdesk::gui {

class SecretBackend {
 public:
  // ok: `text` is the token read ("" when nothing is stored) or empty after a write/remove;
  // !ok: `text` says why the backend could not do it (no secret service, access denied, ...).
  using Done = std::function<void(bool ok, const QString& text)>;
  virtual ~SecretBackend() = default;
  virtual void read(Done done) = 0;
  virtual void write(const QString& token, Done done) = 0;
  virtual void remove(Done done) = 0;
  virtual QString describe() const = 0;  // "the desktop's secret service", "~/.config/inferdesk/hf-token"
};

// The desktop's secret service through QtKeychain (service "InferDesk", key "huggingface-token");
// null when this build has no QtKeychain.
std::unique_ptr<SecretBackend> make_keychain_backend();
// core/hub's FileTokenStore at `path` (0600, written atomically; refused when others can read it).
std::unique_ptr<SecretBackend> make_file_backend(const std::filesystem::path& path);

class TokenVault : public QObject {
  Q_OBJECT

 public:
  // `secret` may be null (no secret service in this build); `file` is where tokens go without one.
  TokenVault(std::unique_ptr<SecretBackend> secret, std::unique_ptr<SecretBackend> file, QObject* parent = nullptr);
  ~TokenVault() override;

  // Reads the stored token (the secret service first, then the file); emits tokenChanged.
  void load();
  // Stores `token` (the secret service when it answers, else the file; a copy in the other place is
  // removed so an old token cannot come back); emits tokenChanged, or failed.
  void save(const QString& token);
  // Removes the token from both places; emits tokenChanged("").
  void clear();

  QString token() const { return token_; }
  bool loaded() const { return loaded_; }
  // Where the current (or next saved) token lives, for the token dialog.
  QString location() const;
  // Why the secret service is not used ("" while it is, or none was tried).
  QString secretServiceProblem() const { return secret_problem_; }

 signals:
  void tokenChanged(const QString& token);
  void failed(const QString& message);

 private:
  void readFile();
  void writeFile(const QString& token);
  void useSecretFailed(const QString& why);
  void setToken(const QString& token, bool in_secret);

  std::unique_ptr<SecretBackend> secret_;
  std::unique_ptr<SecretBackend> file_;
  bool secret_usable_ = true;
  bool in_secret_ = false;
  bool loaded_ = false;
  QString secret_problem_;
  QString token_;
  // Callbacks may arrive after the vault is gone (a keyring job finishing at exit): they check this.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace inferdesk::gui
