#include "gui/hub/wizard/quant_report.h"

#include <QLocale>
#include <QThread>

#include <cmath>
#include <exception>
#include <fstream>
#include <sstream>

#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"
#include "core/util/install_layout.h"
#include "gui/engine/backends.h"

namespace inferdesk::gui {

namespace {

enum Outcome { Done, Failed, Cancelled };

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(ErrorCode::NotFound, "the evaluation text " + p.string() + " cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

QString bytes_text(qint64 b) { return QLocale().formattedDataSize(b, 1, QLocale::DataSizeTraditionalFormat); }

}  // namespace

QuantReportRunner::QuantReportRunner(QObject* parent) : QObject(parent) {}

QuantReportRunner::~QuantReportRunner() {
  cancel();
  waitForIdle();
}

bool QuantReportRunner::start(const QuantReportRequest& request) {
  if (thread_) return false;
  auto shared = std::make_shared<Shared>();
  shared_ = shared;
  // The worker reaches this object only through queued calls; the destructor waits for it, so
  // `self` outlives every call it posts (posted calls to a deleted object are dropped by Qt).
  QuantReportRunner* self = this;
  const int generation = ++generation_;
  thread_ = QThread::create([self, shared, request, generation] {
    QuantEvalReport r;
    QString message, backend = request.backend;
    bool speed = false;
    int outcome = Done;
    try {
      if (backend.isEmpty()) backend = cuda_status().usable ? QStringLiteral("cuda") : QStringLiteral("cpu");
      speed = backend == "cuda";
      const std::filesystem::path text_path = request.text_path.isEmpty()
                                                  ? resources_dir(executable_path()) / "eval" / "declaration.txt"
                                                  : std::filesystem::path(request.text_path.toStdString());
      const std::filesystem::path dir = request.model_dir.toStdString();
      const std::vector<int32_t> ids = Tokenizer::from_dir(dir).encode(read_text(text_path), false);
      if (shared->cancel) throw Error(ErrorCode::Cancelled, "cancelled");
      QuantEvalOptions o;
      o.quantization = request.quantization;
      o.max_tokens = request.max_tokens;
      o.chunk = request.chunk;
      o.measure_speed = speed;
      o.progress = [self, shared](double f) {
        if (shared->cancel) return false;
        QMetaObject::invokeMethod(
            self, [self, f] { emit self->progress(f); }, Qt::QueuedConnection);
        return !shared->cancel;
      };
      r = evaluate_quantization(
          dir, ids, [backend] { return make_backend_by_name(backend); }, o);
    } catch (const Error& e) {
      outcome = e.code() == ErrorCode::Cancelled || shared->cancel ? Cancelled : Failed;
      message = QString::fromUtf8(e.what());
    } catch (const std::exception& e) {
      outcome = shared->cancel ? Cancelled : Failed;
      message = QString::fromUtf8(e.what());
    }
    QMetaObject::invokeMethod(
        self,
        [self, generation, outcome, r, message, backend, speed] {
          self->onWorkerDone(generation, outcome, r, message, backend, speed);
        },
        Qt::QueuedConnection);
  });
  thread_->setObjectName("quant-report");
  thread_->start();
  return true;
}

void QuantReportRunner::cancel() {
  if (shared_) shared_->cancel = true;
}

void QuantReportRunner::waitForIdle() {
  if (!thread_) return;
  thread_->wait();
  delete thread_;
  thread_ = nullptr;
  shared_.reset();
}

void QuantReportRunner::onWorkerDone(int generation, int outcome, const QuantEvalReport& r, const QString& message,
                                     const QString& backend, bool speed) {
  if (generation != generation_) return;
  if (thread_) {
    thread_->wait();  // it has posted its last call: it is about to return
    delete thread_;
    thread_ = nullptr;
  }
  shared_.reset();
  switch (outcome) {
    case Done:
      report_ = r;
      backend_used_ = backend;
      speed_measured_ = speed;
      emit finished();
      break;
    case Cancelled: emit cancelled(); break;
    default: emit failed(message); break;
  }
}

QString QuantReportRunner::reportText() const {
  const QuantEvalReport& r = report_;
  QStringList lines;
  lines << tr("Measured on the %1 over %2 tokens of the shipped text:")
               .arg(backend_used_ == "cuda" ? tr("GPU") : tr("CPU"))
               .arg(r.tokens);
  lines << tr("Perplexity: %1 → %2").arg(r.perplexity_base, 0, 'f', 3).arg(r.perplexity_quant, 0, 'f', 3);
  lines << tr("KL divergence: mean %1, max %2").arg(r.kl_mean, 0, 'g', 3).arg(r.kl_max, 0, 'g', 3);
  lines << tr("Top-1 agreement: %1%").arg(100.0 * r.top1_agreement, 0, 'f', 1);
  lines << tr("Weight size: %1 → %2").arg(bytes_text(r.weight_bytes_base), bytes_text(r.weight_bytes_quant));
  if (speed_measured_ && r.decode_tps_base > 0)
    lines << tr("tok/s: %1 → %2").arg(r.decode_tps_base, 0, 'f', 1).arg(r.decode_tps_quant, 0, 'f', 1);
  else
    lines << tr("tok/s: measured on a GPU only");
  return lines.join('\n');
}

}  // namespace inferdesk::gui
