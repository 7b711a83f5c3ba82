#include "gui/hub/token_vault.h"

#include <exception>

#include "core/hub/token_store.h"

namespace inferdesk::gui {

namespace {

class FileBackend : public SecretBackend {
 public:
  explicit FileBackend(const std::filesystem::path& path) : store_(path) {}
  void read(Done done) override {
    try {
      done(true, QString::fromStdString(store_.load().value_or("")));
    } catch (const std::exception& e) {
      done(false, QString::fromUtf8(e.what()));
    }
  }
  void write(const QString& token, Done done) override {
    try {
      store_.save(token.toStdString());
      done(true, {});
    } catch (const std::exception& e) {
      done(false, QString::fromUtf8(e.what()));
    }
  }
  void remove(Done done) override {
    try {
      store_.clear();
      done(true, {});
    } catch (const std::exception& e) {
      done(false, QString::fromUtf8(e.what()));
    }
  }
  QString describe() const override { return QString::fromStdString(store_.describe()); }

 private:
  hub::FileTokenStore store_;
};

}  // namespace

std::unique_ptr<SecretBackend> make_file_backend(const std::filesystem::path& path) {
  return std::make_unique<FileBackend>(path);
}

TokenVault::TokenVault(std::unique_ptr<SecretBackend> secret, std::unique_ptr<SecretBackend> file, QObject* parent)
    : QObject(parent), secret_(std::move(secret)), file_(std::move(file)), secret_usable_(secret_ != nullptr) {}

TokenVault::~TokenVault() { *alive_ = false; }

QString TokenVault::location() const {
  if (secret_usable_ && secret_) return secret_->describe();
  return file_ ? file_->describe() : QString();
}

void TokenVault::setToken(const QString& token, bool in_secret) {
  loaded_ = true;
  in_secret_ = in_secret;
  token_ = token.trimmed();
  emit tokenChanged(token_);
}

void TokenVault::useSecretFailed(const QString& why) {
  secret_usable_ = false;
  secret_problem_ = why;
}

void TokenVault::load() {
  if (!secret_usable_) return readFile();
  auto alive = alive_;
  secret_->read([this, alive](bool ok, const QString& text) {
    if (!*alive) return;
    if (ok && !text.trimmed().isEmpty()) return setToken(text, true);
    if (!ok) useSecretFailed(text);
    readFile();  // nothing in the keyring: a token saved while it was unavailable may be in the file
  });
}

void TokenVault::readFile() {
  if (!file_) return setToken({}, false);
  file_->read([this](bool ok, const QString& text) {
    if (!ok) emit failed(tr("could not read the stored token: %1").arg(text));
    setToken(ok ? text : QString(), false);
  });
}

void TokenVault::save(const QString& token) {
  const QString t = token.trimmed();
  if (t.isEmpty()) return clear();
  if (!secret_usable_) return writeFile(t);
  auto alive = alive_;
  secret_->write(t, [this, alive, t](bool ok, const QString& text) {
    if (!*alive) return;
    if (!ok) {
      useSecretFailed(text);
      return writeFile(t);
    }
    if (file_) file_->remove([](bool, const QString&) {});  // an older token must not come back
    setToken(t, true);
  });
}

void TokenVault::writeFile(const QString& token) {
  if (!file_) {
    emit failed(tr("the token cannot be stored: %1").arg(secret_problem_));
    return;
  }
  file_->write(token, [this, token](bool ok, const QString& text) {
    if (!ok) {
      emit failed(tr("could not store the token in %1: %2").arg(file_->describe(), text));
      return;
    }
    setToken(token, false);
  });
}

void TokenVault::clear() {
  auto alive = alive_;
  auto finish = [this, alive] {
    if (!*alive) return;
    if (file_)
      file_->remove([this](bool ok, const QString& text) {
        if (!ok) emit failed(tr("could not remove the stored token: %1").arg(text));
      });
    setToken({}, false);
  };
  if (secret_usable_)
    secret_->remove([finish](bool, const QString&) { finish(); });
  else
    finish();
}

}  // namespace inferdesk::gui
