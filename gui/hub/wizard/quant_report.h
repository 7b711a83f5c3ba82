// The quantize step's accuracy report: core/engine's evaluate_quantization (quant_eval.h) run on
// a worker thread over the shipped text (resources/eval/declaration.txt, tokenized with the
// model's own tokenizer), the model loaded as published and quantized, one after the other. On a
// usable CUDA GPU it measures on CUDA with decode tok/s; else on the CPU without speed. Cancel
// goes through the progress callback (it takes effect at the next step: between forward chunks,
// not inside a model's load); destroying the runner cancels and waits for the worker.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "core/engine/quant_eval.h"

class QThread;

namespace inferdesk::gui {

struct QuantReportRequest {
  QString model_dir;
  LoadQuantization quantization = LoadQuantization::Fp8;
  QString backend;       // "cpu" / "cuda"; "" picks CUDA where cuda_status() says usable, else CPU
  QString text_path;     // "" for resources_dir(exe) / "eval/declaration.txt"
  int max_tokens = 256;  // of the text
  int chunk = 64;        // tokens per forward step (a progress tick each)
};

class QuantReportRunner : public QObject {
  Q_OBJECT

 public:
  explicit QuantReportRunner(QObject* parent = nullptr);
  ~QuantReportRunner() override;

  // Starts a measurement; false (and nothing started) while one is still running.
  bool start(const QuantReportRequest& request);
  // Asks the running measurement to stop; cancelled() follows once the worker has stopped.
  void cancel();
  bool running() const { return thread_ != nullptr; }
  // Blocks until no worker runs (tests, shutdown).
  void waitForIdle();

  // The last finished report (valid after finished()).
  const QuantEvalReport& report() const { return report_; }
  QString backendUsed() const { return backend_used_; }  // "cpu" / "cuda"
  bool speedMeasured() const { return speed_measured_; }

  // Human-readable lines of the report.
  QString reportText() const;

 signals:
  void progress(double fraction);  // 0..1
  void finished();
  void failed(const QString& message);
  void cancelled();

 private:
  struct Shared {
    std::atomic<bool> cancel{false};
  };
  void onWorkerDone(int generation, int outcome, const QuantEvalReport& r, const QString& message,
                    const QString& backend, bool speed);

  QThread* thread_ = nullptr;
  int generation_ = 0;  // of the running worker; a stale worker's outcome is dropped
  std::shared_ptr<Shared> shared_;
  QuantEvalReport report_;
  QString backend_used_;
  bool speed_measured_ = false;
};

}  // namespace inferdesk::gui
