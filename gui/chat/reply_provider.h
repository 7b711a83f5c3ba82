// ReplyProvider: who writes a chat's replies — the embedded engine (EngineProvider) or a saved
// OpenAI-compatible endpoint (RemoteProvider). ChatSession's logic stays single: it fits the
// conversation, submits under a key, stops by key and hears tokens and the end through the same
// two signals whoever answers. Both live on the GUI thread; their signals arrive there.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <map>
#include <memory>

#include "core/remote/endpoint.h"
#include "core/sample/sampling_params.h"
#include "gui/chat/context_fit.h"
#include "gui/engine/engine_controller.h"

namespace inferdesk::gui {

class ReplyProvider : public QObject {
  Q_OBJECT

 public:
  using QObject::QObject;
  // Shown in the chat header ("Embedded engine", "vLLM box").
  virtual QString name() const = 0;
  // False when it cannot answer now (no model loaded); ChatSession then asks for a model.
  virtual bool ready() const = 0;
  // The conversation as it will be sent (the engine fits it to its context; a remote server
  // gets it whole and judges the length itself).
  virtual ContextFit fit(const std::vector<PromptMessage>& conversation, const SamplingParams& params) const = 0;
  virtual void submit(const QString& key, const ContextFit& fit, const SamplingParams& params) = 0;
  virtual void stop(const QString& key) = 0;

 signals:
  void tokensArrived(const QString& key, const QString& text, int numTokens);
  void finished(const QString& key, const inferdesk::gui::GenerationStats& stats);
};

// The embedded engine, through EngineController (null in page tests: never ready).
class EngineProvider : public ReplyProvider {
  Q_OBJECT

 public:
  explicit EngineProvider(EngineController* engine, QObject* parent = nullptr);
  QString name() const override { return tr("Embedded engine"); }
  bool ready() const override;
  ContextFit fit(const std::vector<PromptMessage>& conversation, const SamplingParams& params) const override;
  void submit(const QString& key, const ContextFit& fit, const SamplingParams& params) override;
  void stop(const QString& key) override;

 private:
  EngineController* engine_;
};

// A remote endpoint: each reply streams on a worker thread (core/remote's stream_chat); Stop
// hangs up. Its stats are measured the dashboard's way (TTFT to the first text, decode rate).
class RemoteProvider : public ReplyProvider {
  Q_OBJECT

 public:
  explicit RemoteProvider(remote::Endpoint endpoint, QObject* parent = nullptr);
  ~RemoteProvider() override;  // hangs up every stream and waits for the workers
  QString name() const override { return QString::fromStdString(endpoint_.name); }
  bool ready() const override { return true; }
  ContextFit fit(const std::vector<PromptMessage>& conversation, const SamplingParams& params) const override;
  void submit(const QString& key, const ContextFit& fit, const SamplingParams& params) override;
  void stop(const QString& key) override;
  const remote::Endpoint& endpoint() const { return endpoint_; }

 private:
  remote::Endpoint endpoint_;
  std::map<QString, std::shared_ptr<std::atomic<bool>>> stops_;
  std::shared_ptr<std::atomic<int>> running_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace inferdesk::gui
