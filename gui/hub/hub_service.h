// HubService: the desktop app's side of the Hugging Face Hub. It knows where the Hub is (endpoint,
// HF cache, offline mode: from the HubEnvironment that core/hub's read_hub_environment() gives at
// start, or a test's own), which token goes with requests, and runs the Hub client's blocking calls
// on a small thread pool of its own, handing each result (or a HubFailure) back on the UI thread.
//
// Threading: lives on the UI thread. call() runs `work` on the pool with a shared_ptr to the client
// of that moment (a token change builds a new client; calls in flight keep theirs) and delivers to
// `receiver`'s thread; nothing arrives once the receiver is gone. The destructor waits for calls in
// flight (each is bounded by the client's API timeout).
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/hub/download_types.h"
#include "core/hub/hf_cache.h"
#include "core/hub/hub_client.h"
#include "core/hub/hub_env.h"
#include "core/hub/token_store.h"

namespace inferdesk::gui {

// A Hub call that failed, as the GUI shows it.
struct HubFailure {
  QString message;                        // what went wrong and what to do (core/hub's message)
  std::optional<hub::HubErrorKind> kind;  // empty for errors that are not HubErrors
  QString model_page;                     // <endpoint>/<repo>: where gated access is requested
  // Gated, or a token that is missing or refused: entering a token is the way out.
  bool needsToken() const;
  // The message for a person: for a gated model "This model is gated: request access at <a>page</a>,
  // then enter your token", else the message itself (HTML-escaped).
  QString html() const;
};

// The failure for an exception from a Hub call about `repo_id` ("" when about no repository).
HubFailure hub_failure(const std::exception& e, const hub::HubClient& client, const std::string& repo_id);

class HubService : public QObject {
  Q_OBJECT

 public:
  explicit HubService(hub::HubEnvironment env, QObject* parent = nullptr);
  ~HubService() override;

  const hub::HubEnvironment& environment() const { return env_; }
  const hub::HfCache& cache() const { return cache_; }
  bool offline() const { return offline_; }
  QString endpoint() const;

  // The client for new requests, with the resolved token.
  std::shared_ptr<const hub::HubClient> client() const { return client_; }
  // The token typed into the app ("" for none). The token sent is the first of: this one, HF_TOKEN,
  // huggingface_hub's token file ($HF_HOME/token): a token entered here is the user's latest word.
  void setAppToken(const QString& token);
  bool hasToken() const { return source_ != hub::TokenSource::None; }
  QString tokenSource() const;  // "InferDesk", "HF_TOKEN", "the huggingface_hub token file", "none"

  // What downloads use (tests shorten the retry delays).
  const hub::DownloadOptions& downloadOptions() const { return download_options_; }
  void setDownloadOptions(const hub::DownloadOptions& options) { download_options_ = options; }

  // Runs work(client) -> T on the pool; done(T) or failed(HubFailure) then runs on receiver's
  // thread, unless the receiver was destroyed first. `repo_id` names the repository in failures.
  template <typename T, typename Work, typename Done, typename Failed>
  void call(QObject* receiver, std::shared_ptr<const hub::HubClient> client, std::string repo_id, Work work, Done done,
            Failed failed);
  template <typename T, typename Work, typename Done, typename Failed>
  void call(QObject* receiver, std::string repo_id, Work work, Done done, Failed failed) {
    call<T>(receiver, client_, std::move(repo_id), std::move(work), std::move(done), std::move(failed));
  }

 signals:
  void tokenChanged();

 private:
  template <typename T>
  struct Outcome {
    std::optional<T> value;
    HubFailure failure;
  };
  void rebuildClient();

  hub::HubEnvironment env_;
  hub::HfCache cache_;
  bool offline_ = false;
  QString app_token_;
  hub::TokenSource source_ = hub::TokenSource::None;
  std::shared_ptr<const hub::HubClient> client_;
  hub::DownloadOptions download_options_;
  QThreadPool pool_;
};

template <typename T, typename Work, typename Done, typename Failed>
void HubService::call(QObject* receiver, std::shared_ptr<const hub::HubClient> client, std::string repo_id, Work work,
                      Done done, Failed failed) {
  auto* watcher = new QFutureWatcher<Outcome<T>>(receiver);
  QObject::connect(watcher, &QFutureWatcherBase::finished, receiver, [watcher, done, failed] {
    Outcome<T> o = watcher->result();
    watcher->deleteLater();
    if (o.value)
      done(std::move(*o.value));
    else
      failed(o.failure);
  });
  watcher->setFuture(QtConcurrent::run(&pool_, [client, repo_id, work]() -> Outcome<T> {
    Outcome<T> o;
    try {
      o.value.emplace(work(*client));
    } catch (const std::exception& e) {
      o.failure = hub_failure(e, *client, repo_id);
    }
    return o;
  }));
}

}  // namespace inferdesk::gui
