#include "gui/engine/engine_controller.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QThread>

#include <chrono>
#include <exception>

#include "core/engine/engine.h"
#include "core/engine/model_loader.h"
#include "core/util/error.h"
#include "gui/engine/backends.h"
#include "gui/perf/rate_meter.h"

namespace inferdesk::gui {

namespace {

QString message_of(const std::exception& e) {
  if (const auto* err = dynamic_cast<const Error*>(&e))
    return QString("%1: %2").arg(to_string(err->code()), QString::fromUtf8(err->what()));
  return QString::fromUtf8(e.what());
}

QString reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
    case FinishReason::None: break;
  }
  return "none";
}

void register_meta_types() {
  qRegisterMetaType<ModelSummary>();
  qRegisterMetaType<GenerationStats>();
  qRegisterMetaType<EngineStats>();
  qRegisterMetaType<SamplingParams>();
  qRegisterMetaType<std::vector<int32_t>>();
}

}  // namespace

QString GenerationStats::toJson() const {
  QJsonObject o{{"tokens", tokens},
                {"prompt_tokens", prompt_tokens},
                {"cached_prompt_tokens", cached_prompt_tokens},
                {"tokens_per_s", tokens_per_s},
                {"ttft_s", ttft_s},
                {"elapsed_s", elapsed_s},
                {"finish_reason", finish_reason}};
  if (!error.isEmpty()) o.insert("error", error);
  return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

// Filled by the engine thread, drained by flush().
struct EngineController::Pending {
  std::vector<int32_t> ids;
  bool finished = false;
  FinishReason reason = FinishReason::None;
  std::string error;
  double ttft_s = 0, elapsed_s = 0;
  int prompt_tokens = 0, cached_prompt_tokens = 0;
};

struct EngineController::Active {
  std::optional<IncrementalDecoder> decoder;  // absent when the model has no tokenizer
  int tokens = 0;
  QString decode_error;  // set when a token could not be decoded: the request ends as an error
};

EngineController::EngineController(const CudaBackendOptions& cuda, QObject* parent) : QObject(parent), cuda_(cuda) {
  register_meta_types();
  flush_timer_ = new QTimer(this);
  flush_timer_->setInterval(kFlushIntervalMs);
  connect(flush_timer_, &QTimer::timeout, this, &EngineController::flush);
  stats_timer_ = new QTimer(this);
  stats_timer_->setInterval(kStatsIntervalMs);
  connect(stats_timer_, &QTimer::timeout, this, &EngineController::emitStats);
}

EngineController::~EngineController() {
  cancel_load_ = true;
  std::shared_ptr<Engine> engine;
  {
    std::lock_guard lock(mutex_);
    unloadLocked(engine);
  }
  engine.reset();  // joins the engine thread; its last callbacks only touch pending_
}

void EngineController::cancelLoad() { cancel_load_ = true; }

bool EngineController::isLoaded() const {
  std::lock_guard lock(mutex_);
  return engine_ != nullptr;
}

std::optional<ModelSummary> EngineController::loadedModel() const {
  std::lock_guard lock(mutex_);
  return summary_;
}

std::shared_ptr<const PromptRenderer> EngineController::promptRenderer() const {
  std::lock_guard lock(mutex_);
  return renderer_;
}

RenderedPrompt EngineController::renderPrompt(const std::vector<PromptMessage>& messages,
                                              const QString& templateKwargsJson, bool addGenerationPrompt) const {
  const auto renderer = promptRenderer();
  if (!renderer) {
    RenderedPrompt r;
    r.error = "no model is loaded";
    return r;
  }
  return renderer->render(messages, templateKwargsJson, addGenerationPrompt);
}

EngineStats EngineController::currentStats() const {
  std::lock_guard lock(mutex_);
  return last_stats_;
}

int EngineController::activeRequests() const { return active_count_.load(); }

std::weak_ptr<Engine> EngineController::engineHandle() const {
  std::lock_guard lock(mutex_);
  return engine_;
}

namespace {
// What the app shows of a loaded model (the engine's own figures are added after it starts).
ModelSummary summary_of(const LoadedModel& model, const std::filesystem::path& dir, const QString& backend,
                        const PromptRenderer& renderer, LoadPrecision precision) {
  ModelSummary s;
  s.name = QString::fromStdString(model.name);
  s.path = QString::fromStdString(std::filesystem::absolute(dir).lexically_normal().string());
  s.backend = backend;
  s.architecture = QString::fromStdString(model.config.model_type);
  s.weight_bytes = model.weight_bytes;
  s.num_layers = static_cast<int>(model.config.num_hidden_layers);
  s.num_experts = static_cast<int>(model.config.num_experts);
  s.experts_per_token = static_cast<int>(model.config.num_experts_per_tok);
  s.has_shared_expert = model.config.shared_expert_intermediate_size > 0;
  if (model.config.is_moe())
    for (int64_t l = 0; l < model.config.num_hidden_layers; ++l) s.moe_layers.push_back(model.config.is_moe_layer(l));
  s.vocab_size = static_cast<int>(model.config.vocab_size);
  s.has_tokenizer = renderer.hasTokenizer();
  s.has_chat_template = renderer.hasChatTemplate();
  s.quantization = QString::fromStdString(model.quantization);
  s.kv_cache = precision.kv_cache;
  return s;
}
}  // namespace

void EngineController::loadModel(const QString& path, const QString& backend, int contextLength, qint64 kvBudgetBytes,
                                 LoadPrecision precision) {
  unload();
  cancel_load_ = false;
  emit loadStarted(path);
  auto last_report = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  LoadProgress progress = [&](int64_t done, int64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (done >= total || now - last_report >= std::chrono::milliseconds(50)) {
      last_report = now;
      emit loadProgress(done, total);
    }
    return !cancel_load_.load();
  };
  try {
    if (contextLength < 0 || kvBudgetBytes < 0)
      throw Error(ErrorCode::InvalidArgument, "context length and KV budget must not be negative");
    const std::filesystem::path dir = path.toStdString();
    LoadOptions lo;
    lo.quantization = precision.quantization;
    LoadedModel model = load_model_folder(dir, make_backend_by_name(backend, cuda_), progress, lo);
    const int64_t max_pos = model.config.max_position_embeddings;
    if (contextLength > max_pos)
      throw Error(ErrorCode::InvalidArgument, "context length " + std::to_string(contextLength) +
                                                  " is longer than the model's maximum " + std::to_string(max_pos));
    EngineOptions options;
    options.max_model_len = contextLength;
    options.kv_cache_dtype = precision.kv_cache;
    const int64_t ctx = contextLength > 0 ? contextLength : max_pos;
    if (kvBudgetBytes > 0)
      options.kv_cache_bytes = kvBudgetBytes;
    else if (backend != "cuda")  // CPU: one request of the full context, plus one block of slack
      options.num_kv_blocks = static_cast<int32_t>((ctx + options.block_size - 1) / options.block_size + 1);
    // CUDA with no budget: the engine sizes the cache from the GPU memory left after the weights.
    if (cancel_load_) throw Error(ErrorCode::Cancelled, "model loading was cancelled");
    auto renderer = PromptRenderer::load(dir);
    // A padded vocabulary (vocab_size above the tokenizer's ids): never generate what cannot be
    // decoded.
    if (const Tokenizer* tok = renderer->tokenizer())
      options.sample_vocab = sample_vocab_for(*tok, model.config.vocab_size);
    ModelSummary s = summary_of(model, dir, backend, *renderer, precision);
    auto engine = std::make_unique<Engine>(std::move(model), options);
    s.context_length = engine->max_model_len();
    s.sample_vocab = engine->sample_vocab();
    s.kv_blocks = engine->num_kv_blocks();
    s.block_size = options.block_size;
    {
      std::lock_guard lock(mutex_);
      engine_ = std::move(engine);
      summary_ = s;
      renderer_ = std::move(renderer);
      last_stats_ = engine_->stats();
    }
    stats_timer_->start();
    emit modelLoaded(s);
    emitStats();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Cancelled) {
      emit loadFailed("loading was cancelled", true);
      return;
    }
    const QString msg = "could not load " + path + ": " + message_of(e);
    emit loadFailed(msg, false);
    emit errorOccurred(msg);
  } catch (const std::exception& e) {
    const QString msg = "could not load " + path + ": " + message_of(e);
    emit loadFailed(msg, false);
    emit errorOccurred(msg);
  }
}

void EngineController::unloadLocked(std::shared_ptr<Engine>& out) {
  out = std::move(engine_);
  summary_.reset();
  renderer_.reset();
  last_stats_ = EngineStats{};
}

void EngineController::unload() {
  std::shared_ptr<Engine> engine;
  {
    std::lock_guard lock(mutex_);
    if (!engine_) return;
    unloadLocked(engine);
  }
  engine.reset();  // every running request gets its Cancelled event into pending_
  flush();         // ... and its finished signal now
  stats_timer_->stop();
  emit modelUnloaded();
  emit statsUpdated(EngineStats{});
}

void EngineController::failRequest(const QString& key, const QString& message) {
  GenerationStats st;
  st.finish_reason = "error";
  st.error = message;
  emit finished(key, st);
  emit errorOccurred(message);
}

void EngineController::submit(const QString& key, const std::vector<int32_t>& promptIds, const SamplingParams& params) {
  QString refusal;
  std::shared_ptr<const PromptRenderer> renderer;
  if (active_.count(key)) {
    refusal = "a request with key '" + key + "' is already running";
  } else {
    std::lock_guard lock(mutex_);
    if (!engine_) {
      refusal = "no model is loaded: load one on the Models page first";
    } else {
      renderer = renderer_;
      pending_[key] = std::make_unique<Pending>();
      try {
        ids_[key] = engine_->submit(Request{promptIds, params},
                                    [this, key](const StreamEvent& ev) { onStreamEvent(key, ev); });
      } catch (const std::exception& e) {
        pending_.erase(key);
        refusal = "the request was refused: " + message_of(e);
      }
    }
  }
  if (!refusal.isEmpty()) {  // signals are emitted with no lock held
    failRequest(key, refusal);
    return;
  }
  auto active = std::make_unique<Active>();
  if (renderer && renderer->tokenizer()) active->decoder.emplace(*renderer->tokenizer(), /*skip_special_tokens=*/true);
  active_[key] = std::move(active);
  active_count_ = static_cast<int>(active_.size());
  if (!flush_timer_->isActive()) flush_timer_->start();
}

void EngineController::stop(const QString& key) {
  std::lock_guard lock(mutex_);
  const auto it = ids_.find(key);
  if (it != ids_.end() && engine_) engine_->cancel(it->second);
}

void EngineController::onStreamEvent(const QString& key, const StreamEvent& ev) {
  std::lock_guard lock(mutex_);
  const auto it = pending_.find(key);
  if (it == pending_.end()) return;
  Pending& p = *it->second;
  for (const auto& t : ev.tokens) p.ids.push_back(t.id);
  p.ttft_s = ev.time_to_first_token_s;
  p.elapsed_s = ev.elapsed_s;
  p.prompt_tokens = ev.num_prompt_tokens;
  p.cached_prompt_tokens = ev.num_cached_prompt_tokens;
  if (ev.finished) {
    p.finished = true;
    p.reason = ev.reason;
    p.error = ev.error;
  }
}

void EngineController::flush() {
  std::vector<std::pair<QString, Pending>> batch;
  {
    std::lock_guard lock(mutex_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      Pending& p = *it->second;
      if (p.ids.empty() && !p.finished) {
        ++it;
        continue;
      }
      batch.emplace_back(it->first, std::move(p));
      p.ids.clear();
      if (p.finished) {
        ids_.erase(it->first);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& [key, p] : batch) {
    const auto it = active_.find(key);
    if (it == active_.end()) continue;
    Active& a = *it->second;
    QString text;
    // The reply's tokens: all of them without a tokenizer; with one, those up to and including
    // an undecodable token (the engine may run a few steps past it before the stop lands).
    int accepted = a.decoder ? 0 : static_cast<int>(p.ids.size());
    for (int32_t id : p.ids) {
      if (!a.decoder || !a.decode_error.isEmpty()) break;
      ++accepted;
      try {
        text += QString::fromStdString(a.decoder->push(id));
      } catch (const std::exception& e) {
        // Text after an undecodable token would be wrong: the reply ends here, as an error.
        a.decode_error = QString("could not decode generated token %1: %2").arg(id).arg(QString::fromUtf8(e.what()));
        stop(key);
      }
    }
    if (p.finished && a.decoder && a.decode_error.isEmpty()) text += QString::fromStdString(a.decoder->finish());
    a.tokens += accepted;
    if (accepted > 0 || !text.isEmpty()) emit tokensArrived(key, text, accepted);
    if (!p.finished) continue;
    GenerationStats st;
    st.tokens = a.tokens;
    st.prompt_tokens = p.prompt_tokens;
    st.cached_prompt_tokens = p.cached_prompt_tokens;
    st.ttft_s = p.ttft_s;
    st.elapsed_s = p.elapsed_s;
    st.tokens_per_s = replyDecodeRate(a.tokens, p.ttft_s, p.elapsed_s);  // the reply's own times
    st.finish_reason = reason_name(p.reason);
    st.error = QString::fromStdString(p.error);
    if (!a.decode_error.isEmpty()) {
      st.finish_reason = "error";
      st.error = a.decode_error;
    }
    active_.erase(it);
    active_count_ = static_cast<int>(active_.size());
    emit finished(key, st);
    if (st.finish_reason == "error")
      emit errorOccurred("generation failed: " + (st.error.isEmpty() ? QString("unknown error") : st.error));
  }
  if (active_.empty()) flush_timer_->stop();
}

void EngineController::emitStats() {
  EngineStats s;
  {
    std::lock_guard lock(mutex_);
    if (!engine_) return;
    s = engine_->stats();
    last_stats_ = s;
  }
  emit statsUpdated(s);
}

EngineThread::EngineThread(const CudaBackendOptions& cuda) {
  thread_ = new QThread();
  thread_->setObjectName("inferdesk-engine-controller");
  controller_ = new EngineController(cuda);
  controller_->moveToThread(thread_);
  thread_->start();
}

EngineThread::~EngineThread() {
  controller_->cancelLoad();
  EngineController* c = controller_;
  QMetaObject::invokeMethod(
      c, [c] { delete c; }, Qt::BlockingQueuedConnection);
  thread_->quit();
  thread_->wait();
  delete thread_;
}

}  // namespace inferdesk::gui
