// The desktop's secret service through QtKeychain (Debian's qtkeychain-qt6-dev). QtKeychain's
// insecure fallback (a plain-text QSettings file) stays off: without a secret service the vault
// uses core/hub's 0600 file instead, which says so.
#include <qt6keychain/keychain.h>

#include "gui/hub/token_vault.h"

namespace inferdesk::gui {

namespace {

constexpr const char* kService = "InferDesk";
constexpr const char* kKey = "huggingface-token";

template <typename Job>
Job* make_job() {
  auto* job = new Job(QString::fromLatin1(kService));
  job->setAutoDelete(true);
  job->setInsecureFallback(false);
  job->setKey(QString::fromLatin1(kKey));
  return job;
}

class KeychainBackend : public SecretBackend {
 public:
  void read(Done done) override {
    auto* job = make_job<QKeychain::ReadPasswordJob>();
    QObject::connect(job, &QKeychain::Job::finished, [done](QKeychain::Job* j) {
      if (j->error() == QKeychain::EntryNotFound) return done(true, {});
      if (j->error() != QKeychain::NoError) return done(false, j->errorString());
      done(true, static_cast<QKeychain::ReadPasswordJob*>(j)->textData());
    });
    job->start();
  }
  void write(const QString& token, Done done) override {
    auto* job = make_job<QKeychain::WritePasswordJob>();
    job->setTextData(token);
    QObject::connect(job, &QKeychain::Job::finished,
                     [done](QKeychain::Job* j) { done(j->error() == QKeychain::NoError, j->errorString()); });
    job->start();
  }
  void remove(Done done) override {
    auto* job = make_job<QKeychain::DeletePasswordJob>();
    QObject::connect(job, &QKeychain::Job::finished, [done](QKeychain::Job* j) {
      const bool ok = j->error() == QKeychain::NoError || j->error() == QKeychain::EntryNotFound;
      done(ok, j->errorString());
    });
    job->start();
  }
  QString describe() const override { return QObject::tr("the desktop's secret service (keyring)"); }
};

}  // namespace

std::unique_ptr<SecretBackend> make_keychain_backend() { return std::make_unique<KeychainBackend>(); }

}  // namespace inferdesk::gui
