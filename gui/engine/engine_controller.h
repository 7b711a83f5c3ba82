// EngineController: the GUI's only door to the inference engine.
//
// A QObject that lives on its own QThread (EngineThread below creates both). It owns the loaded
// model and core's Engine (which has its own engine thread, see core/engine/CONTRACT.md). The GUI
// talks to it through queued signal/slot connections only, so no GUI call ever waits for a model
// load or a decoding step:
//
//   connect(button, &QPushButton::clicked, controller, [=] { ... });      // or
//   QMetaObject::invokeMethod(controller, "submit", Qt::QueuedConnection, ...);
//   connect(controller, &EngineController::tokensArrived, page, &ChatPage::appendText);
//
// Streaming: engine callbacks (engine thread) only append token ids to a per-request buffer under
// a mutex; a ~30 ms timer on the controller thread drains the buffers, detokenizes incrementally
// (core/tokenizer IncrementalDecoder) and emits one tokensArrived per request per batch, then
// finished once. Engine statistics are emitted ~10 times a second while a model is loaded.
// Errors (a bad folder, an invalid request, an engine failure) become errorOccurred / loadFailed /
// finished-with-error signals carrying a message for the user; nothing here throws into Qt.
//
// Methods marked "thread-safe" may be called directly from any thread (the GUI thread included);
// they never wait for a load or a step.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/backend/cuda_options.h"
#include "core/engine/model_loader.h"
#include "core/engine/stats.h"
#include "core/sample/sampling_params.h"
#include "core/tokenizer/tokenizer.h"
#include "gui/engine/prompt_renderer.h"

class QThread;

namespace inferdesk {
class Engine;
struct StreamEvent;
}  // namespace inferdesk

namespace inferdesk::gui {

// What is loaded (a copy; immutable while the model stays loaded).
// The precision a model loads with (core LoadOptions, EngineOptions::kv_cache_dtype).
struct LoadPrecision {
  // Quantize an unquantized folder's projections as it loads (FP8, or INT8 / INT4 round-to-nearest).
  LoadQuantization quantization = LoadQuantization::None;
  KvCacheDtype kv_cache = KvCacheDtype::Auto;  // E4M3 (half the memory of BF16) or 8-bit codes
};

struct ModelSummary {
  QString name;            // folder name
  QString path;            // absolute folder path
  QString backend;         // "cpu" or "cuda"
  QString architecture;    // config.json model_type
  int context_length = 0;  // the engine's max_model_len (prompt + generated tokens of one request)
  int kv_blocks = 0;
  int block_size = 0;
  qint64 weight_bytes = 0;
  int num_layers = 0;
  int num_experts = 0;  // 0 for dense models
  int experts_per_token = 0;
  bool has_shared_expert = false;  // qwen2_moe: an expert every token goes through
  std::vector<bool> moe_layers;    // per layer: routes to experts (false: a dense layer)
  int vocab_size = 0;              // config.json vocab_size (rows of the embedding and lm_head)
  int sample_vocab = 0;            // ids the engine may generate: the tokenizer's size when it is smaller
  bool has_tokenizer = false;
  bool has_chat_template = false;
  QString quantization;  // the weights' scheme as loaded ("none", "fp8 e4m3 per-channel, ...")
  KvCacheDtype kv_cache = KvCacheDtype::Auto;
};

// One finished request (finished signal): what the chat page shows under a reply and stores.
struct GenerationStats {
  int tokens = 0;  // generated tokens
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;  // served from the prefix cache
  double tokens_per_s = 0;       // decode rate: (tokens - 1) / (elapsed - ttft)
  double ttft_s = 0;             // time to first token (since submit)
  double elapsed_s = 0;          // since submit
  QString finish_reason;         // "stop", "length", "cancelled", "error"
  QString error;                 // set when finish_reason == "error" (incl. undecodable output)

  // {"tokens":..,"prompt_tokens":..,"tokens_per_s":..,"ttft_s":..,"elapsed_s":..,
  //  "finish_reason":"..","error":".."} (compact JSON, for store::Message stats).
  QString toJson() const;
};

class EngineController : public QObject {
  Q_OBJECT

 public:
  // Created by EngineThread, which moves it to its thread. Tests may also drive it on the current
  // thread (the signals are then direct), but the app always runs it on its own thread.
  explicit EngineController(const CudaBackendOptions& cuda = {}, QObject* parent = nullptr);
  ~EngineController() override;  // unloads (cancels running requests) on the calling thread

  // --- thread-safe ---------------------------------------------------------------------------
  // Asks a running loadModel to stop at its next progress report (then loadFailed(.., true)).
  void cancelLoad();
  bool isLoaded() const;
  std::optional<ModelSummary> loadedModel() const;
  // The loaded model's tokenizer and chat template; null when no model is loaded. Immutable and
  // safe to use from any thread (renderer->render(...), renderer->tokenizer()).
  std::shared_ptr<const PromptRenderer> promptRenderer() const;
  // Shorthand for promptRenderer()->render(...); RenderedPrompt::error says why when no model is
  // loaded or the template fails.
  RenderedPrompt renderPrompt(const std::vector<PromptMessage>& messages, const QString& templateKwargsJson = {},
                              bool addGenerationPrompt = true) const;
  // The latest statistics snapshot (all zero without a model).
  EngineStats currentStats() const;
  // Requests submitted and not finished yet.
  int activeRequests() const;
  // The loaded engine, weakly (for the local server, gui/server): lock it only for a call, so
  // that unloading still frees the model at once. Empty when nothing is loaded.
  std::weak_ptr<Engine> engineHandle() const;

  // Batching period of tokensArrived (default 30 ms) and of statsUpdated (default 100 ms).
  static constexpr int kFlushIntervalMs = 30;
  static constexpr int kStatsIntervalMs = 100;

 public slots:
  // Loads a Hugging Face folder on "cpu" or "cuda" (replacing any loaded model). contextLength:
  // the longest request (0: the model's max_position_embeddings); kvBudgetBytes: KV-cache memory
  // (0: on the CPU enough for one request of contextLength tokens; on CUDA what the GPU has left
  // after the weights, as the engine sizes it). Emits loadStarted, loadProgress (weight
  // bytes), then modelLoaded or loadFailed (+ errorOccurred unless cancelled).
  // precision: quantize on load and the KV-cache dtype (LoadPrecision).
  void loadModel(const QString& path, const QString& backend, int contextLength, qint64 kvBudgetBytes,
                 LoadPrecision precision = {});
  // Cancels every running request (each gets finished(.., "cancelled")) and frees the model.
  void unload();
  // Queues a request under the caller's key (unique among active requests). Tokens arrive as
  // tokensArrived(key, ..) batches, then finished(key, ..). A request that cannot be queued (no
  // model, bad parameters, prompt too long, duplicate key) gets finished(key, stats with
  // finish_reason "error") and errorOccurred at once.
  void submit(const QString& key, const std::vector<int32_t>& promptIds, const inferdesk::SamplingParams& params);
  // Cancels a request now (Engine::cancel): its finished signal follows with "cancelled" and the
  // text generated so far has been delivered. Unknown keys are ignored. Thread-safe.
  void stop(const QString& key);

 signals:
  void loadStarted(const QString& path);
  void loadProgress(qint64 doneBytes, qint64 totalBytes);
  void modelLoaded(const inferdesk::gui::ModelSummary& model);
  void loadFailed(const QString& message, bool cancelled);
  void modelUnloaded();
  void tokensArrived(const QString& key, const QString& text, int numTokens);
  void finished(const QString& key, const inferdesk::gui::GenerationStats& stats);
  void errorOccurred(const QString& message);
  void statsUpdated(const inferdesk::EngineStats& stats);

 private:
  struct Pending;  // tokens the engine delivered and the flush has not yet
  struct Active;   // controller-thread state per request (decoder, counts)
  void onStreamEvent(const QString& key, const StreamEvent& ev);  // engine thread
  void flush();
  void emitStats();
  void ensureTimers();
  void failRequest(const QString& key, const QString& message);
  void unloadLocked(std::shared_ptr<Engine>& out);

  // Guarded by mutex_: the engine, what is loaded, key -> request id, pending events.
  const CudaBackendOptions cuda_;  // for every CUDA backend this controller creates
  mutable std::mutex mutex_;
  std::shared_ptr<Engine> engine_;  // shared only with engineHandle()'s weak references
  std::optional<ModelSummary> summary_;
  std::shared_ptr<const PromptRenderer> renderer_;
  std::map<QString, int64_t> ids_;
  std::map<QString, std::unique_ptr<Pending>> pending_;
  EngineStats last_stats_;

  // Controller thread only.
  std::map<QString, std::unique_ptr<Active>> active_;
  QTimer* flush_timer_ = nullptr;
  QTimer* stats_timer_ = nullptr;

  std::atomic<bool> cancel_load_{false};
  std::atomic<int> active_count_{0};
};

// Owns the controller's QThread: creates the controller, moves it to a new thread and starts it;
// the destructor deletes the controller on that thread (unloading the model), then joins it.
class EngineThread {
 public:
  explicit EngineThread(const CudaBackendOptions& cuda = {});
  ~EngineThread();
  EngineThread(const EngineThread&) = delete;
  EngineThread& operator=(const EngineThread&) = delete;
  EngineController* controller() const { return controller_; }

 private:
  QThread* thread_ = nullptr;
  EngineController* controller_ = nullptr;
};

}  // namespace inferdesk::gui

Q_DECLARE_METATYPE(inferdesk::gui::ModelSummary)
Q_DECLARE_METATYPE(inferdesk::gui::GenerationStats)
Q_DECLARE_METATYPE(inferdesk::EngineStats)
Q_DECLARE_METATYPE(inferdesk::SamplingParams)
Q_DECLARE_METATYPE(std::vector<int32_t>)
