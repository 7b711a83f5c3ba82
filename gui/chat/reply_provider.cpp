#include "gui/chat/reply_provider.h"

#include <QPointer>
#include <QThread>
#include <QtConcurrent/QtConcurrentRun>

#include "core/remote/chat_client.h"

namespace inferdesk::gui {

EngineProvider::EngineProvider(EngineController* engine, QObject* parent) : ReplyProvider(parent), engine_(engine) {
  if (!engine_) return;
  connect(engine_, &EngineController::tokensArrived, this, &ReplyProvider::tokensArrived);
  connect(engine_, &EngineController::finished, this, &ReplyProvider::finished);
}

bool EngineProvider::ready() const { return engine_ && engine_->isLoaded(); }

ContextFit EngineProvider::fit(const std::vector<PromptMessage>& conversation, const SamplingParams& params) const {
  const auto model = engine_ ? engine_->loadedModel() : std::nullopt;
  const int context = model ? model->context_length : 0;
  EngineController* engine = engine_;
  return fitToContext(conversation, context, params.max_tokens,
                      [engine](const std::vector<PromptMessage>& msgs) { return engine->renderPrompt(msgs); });
}

void EngineProvider::submit(const QString& key, const ContextFit& fit, const SamplingParams& params) {
  EngineController* engine = engine_;
  const std::vector<int32_t> ids = fit.prompt.ids;
  QMetaObject::invokeMethod(
      engine, [engine, key, ids, params] { engine->submit(key, ids, params); }, Qt::QueuedConnection);
}

void EngineProvider::stop(const QString& key) {
  if (engine_) engine_->stop(key);
}

RemoteProvider::RemoteProvider(remote::Endpoint endpoint, QObject* parent)
    : ReplyProvider(parent), endpoint_(std::move(endpoint)) {}

RemoteProvider::~RemoteProvider() {
  for (auto& [key, flag] : stops_) *flag = true;
  while (running_->load() > 0) QThread::msleep(5);  // a hung-up stream ends within a poll
}

ContextFit RemoteProvider::fit(const std::vector<PromptMessage>& conversation, const SamplingParams&) const {
  ContextFit f;
  f.ok = !conversation.empty();
  f.messages = conversation;
  if (!f.ok) f.error = tr("There is nothing to send.");
  return f;
}

namespace {

GenerationStats stats_of(const remote::ReplyStats& r) {
  GenerationStats s;
  s.tokens = static_cast<int>(r.output_tokens);
  s.prompt_tokens = static_cast<int>(r.prompt_tokens);
  s.ttft_s = r.ttft_s;
  s.elapsed_s = r.latency_s;
  s.tokens_per_s = r.tokens_per_s;
  s.finish_reason = QString::fromStdString(r.finish_reason);
  return s;
}

}  // namespace

void RemoteProvider::submit(const QString& key, const ContextFit& fit, const SamplingParams& params) {
  std::vector<remote::ChatMessage> messages;
  for (const auto& m : fit.messages) messages.push_back({m.role.toStdString(), m.content.toStdString()});
  remote::ChatOptions options;
  options.temperature = params.temperature;
  options.top_p = params.top_p;
  options.max_tokens = params.max_tokens;
  options.seed = params.seed;
  auto stop = std::make_shared<std::atomic<bool>>(false);
  stops_[key] = stop;
  QPointer<RemoteProvider> self(this);
  auto running = running_;
  ++*running;
  const remote::Endpoint endpoint = endpoint_;
  // Signals are queued to this object's (GUI) thread; a provider gone by then drops them.
  (void)QtConcurrent::run([self, running, endpoint, messages, options, stop, key] {
    auto post = [self](auto fn) { QMetaObject::invokeMethod(self.data(), fn, Qt::QueuedConnection); };
    GenerationStats stats;
    try {
      const auto r = remote::stream_chat(endpoint, messages, options, [&](std::string_view text) {
        const QString t = QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
        if (self) post([self, key, t] { if (self) emit self->tokensArrived(key, t, 1); });
      }, stop.get());
      stats = stats_of(r);
    } catch (const std::exception& e) {
      stats.finish_reason = "error";
      stats.error = QString::fromUtf8(e.what());
    }
    if (self) post([self, key, stats] {
      if (!self) return;
      self->stops_.erase(key);
      emit self->finished(key, stats);
    });
    --*running;
  });
}

void RemoteProvider::stop(const QString& key) {
  if (const auto it = stops_.find(key); it != stops_.end()) *it->second = true;
}

}  // namespace inferdesk::gui
