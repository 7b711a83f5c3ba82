// Model manager: adding folders through the code path behind the dialog (valid, broken, twice),
// the table model (QAbstractItemModelTester + row signals), memory estimates and the refusal of a
// load that will not fit, load / unload states, removal, persistence, and the page itself.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableView>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <thread>

#include "core/engine/engine.h"
#include "gui/engine/backends.h"
#include "gui/models/model_manager.h"
#include "gui/models/models_page.h"
#include "tests/gui/support/gui_test_support.h"

using namespace inferdesk;
using namespace inferdesk::gui;
using inferdesk::gui::test::fixture;

namespace {

QString cell(ModelTableModel* m, int row, int column) { return m->data(m->index(row, column)).toString(); }

// Holds the engine thread, so that a reply cannot end on its own before the test has stopped it
// (tiny-chat writes 4000 tokens in about half a second, less than a slow machine may need for
// the clicks of a test). hold() submits a request straight to the controller's engine (the
// controller does not know it) whose callback waits, on its first event, until release() or
// until the engine is being destroyed (the controller dropped it: an unload). Requests submitted
// meanwhile stay queued, active for the controller, and get their Cancelled event when the
// engine goes. The engine's contract asks callbacks to return at once because every request
// waits for them: this one waits on purpose.
class EngineGate {
 public:
  ~EngineGate() { release(); }
  // True once the engine thread waits in the callback.
  bool hold(EngineController* c, const std::vector<int32_t>& promptIds) {
    state_->engine = c->engineHandle();
    {
      const std::shared_ptr<Engine> engine = state_->engine.lock();
      if (!engine) return false;
      SamplingParams p;
      p.max_tokens = 1;
      engine->submit(Request{promptIds, p}, [state = state_](const StreamEvent&) {
        if (state->holding.exchange(true)) return;  // the first event only
        while (!state->released && !state->engine.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      });
    }  // no reference kept: an unload still destroys the engine (and so lets it go)
    return QTest::qWaitFor([this] { return state_->holding.load(); }, 30000);
  }
  void release() { state_->released = true; }

 private:
  struct State {
    std::weak_ptr<Engine> engine;
    std::atomic<bool> holding{false};
    std::atomic<bool> released{false};
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

class TestModelManager : public QObject {
  Q_OBJECT

 private slots:
  void addsAValidFolder() {
    test::TempStores s(nullptr);
    ModelManager mm(*s.ctx);
    QAbstractItemModelTester tester(mm.table(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy inserted(mm.table(), &QAbstractItemModel::rowsInserted);
    const AddModelResult r = mm.addFolder(fixture("tiny-chat"));
    QVERIFY2(r.ok, qPrintable(r.error));
    QVERIFY(!r.updated);
    QCOMPARE(inserted.count(), 1);
    QCOMPARE(mm.table()->rowCount(), 1);
    QCOMPARE(cell(mm.table(), 0, ModelTableModel::Name), QString("tiny-chat"));
    QCOMPARE(cell(mm.table(), 0, ModelTableModel::Architecture), QString("qwen2"));
    QCOMPARE(cell(mm.table(), 0, ModelTableModel::DType), QString("BF16"));
    QCOMPARE(cell(mm.table(), 0, ModelTableModel::Context), QString("4096"));
    QCOMPARE(cell(mm.table(), 0, ModelTableModel::ChatTemplate), QString("yes"));
    QCOMPARE(cell(mm.table(), 0, ModelTableModel::ActiveParameters), QString("all"));
    QVERIFY(r.facts.params_total > 0);
    QCOMPARE(cell(mm.table(), 0, ModelTableModel::Parameters), format_count(r.facts.params_total));
    QVERIFY(r.facts.size_on_disk > r.facts.weight_bytes);
    QVERIFY(r.facts.has_tokenizer);
    QCOMPARE(mm.table()->index(0, 0).data(ModelTableModel::IdRole).toLongLong(), r.id);
    // Persisted in the store's registry with the facts as JSON.
    const auto entry = s.models->find_by_path(fixture("tiny-chat").toStdString());
    QVERIFY(entry.has_value());
    QCOMPARE(entry->architecture, std::string("qwen2"));
    const auto facts = ModelFacts::fromJson(QString::fromStdString(entry->info_json));
    QVERIFY(facts.has_value());
    QCOMPARE(facts->params_total, r.facts.params_total);
    QCOMPARE(facts->has_chat_template, true);
  }

  void showsActiveParametersForMoE() {
    test::TempStores s(nullptr);
    ModelManager mm(*s.ctx);
    QAbstractItemModelTester tester(mm.table(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const AddModelResult r = mm.addFolder(fixture("qwen3_moe"));
    QVERIFY2(r.ok, qPrintable(r.error));
    QVERIFY(r.facts.is_moe());
    QCOMPARE(r.facts.num_experts, 8);
    QCOMPARE(r.facts.experts_per_token, 2);
    QVERIFY(r.facts.params_active < r.facts.params_total);
    QCOMPARE(cell(mm.table(), 0, ModelTableModel::ActiveParameters), format_count(r.facts.params_active));
    QCOMPARE(cell(mm.table(), 0, ModelTableModel::ChatTemplate), QString("no"));
    QVERIFY(!r.facts.has_tokenizer);
  }

  // A template that does not parse is shown as unusable, with why, not as "no" (nor "yes").
  void showsAChatTemplateThatCannotBeUsed() {
    test::TempStores s(nullptr);
    ModelManager mm(*s.ctx);
    QTemporaryDir dir;
    for (const char* name : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"})
      QVERIFY(QFile::copy(fixture("tiny-chat") + "/" + name, dir.filePath(name)));
    std::ofstream(dir.filePath("tokenizer_config.json").toStdString()) << R"({"chat_template": "{% if %}"})";
    const AddModelResult r = mm.addFolder(dir.path());
    QVERIFY2(r.ok, qPrintable(r.error));
    QVERIFY(!r.facts.has_chat_template);
    QVERIFY(!r.facts.chat_template_problem.isEmpty());
    const QString shown = cell(mm.table(), 0, ModelTableModel::ChatTemplate);
    QVERIFY2(shown.startsWith("unusable ("), qPrintable(shown));
    const auto back = ModelFacts::fromJson(r.facts.toJson());
    QVERIFY(back.has_value());
    QCOMPARE(back->chat_template_problem, r.facts.chat_template_problem);
  }

  void refusesABrokenFolder() {
    test::TempStores s(nullptr);
    ModelManager mm(*s.ctx);
    QAbstractItemModelTester tester(mm.table(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy inserted(mm.table(), &QAbstractItemModel::rowsInserted);
    QSignalSpy messages(&mm, &ModelManager::statusMessage);
    QTemporaryDir broken;
    std::ofstream(broken.filePath("config.json").toStdString()) << R"({"model_type": "llama", "hidden_size": -3})";
    AddModelResult r = mm.addFolder(broken.path());
    QVERIFY(!r.ok);
    QVERIFY2(r.error.contains(broken.path()), qPrintable(r.error));
    QCOMPARE(messages.count(), 1);
    QCOMPARE(messages.first().at(0).toString(), r.error);
    // Pickle weights, an empty folder, a missing folder: refused with the reason, never added.
    QTemporaryDir pickle;
    QFile::copy(fixture("tiny-chat") + "/config.json", pickle.filePath("config.json"));
    std::ofstream(pickle.filePath("pytorch_model.bin").toStdString()) << "not really";
    QVERIFY(!mm.addFolder(pickle.path()).ok);
    QTemporaryDir empty;
    QVERIFY(mm.addFolder(empty.path()).error.contains("config.json"));
    QVERIFY(!mm.addFolder("/no/such/folder").ok);
    QVERIFY(!mm.addFolder("").ok);
    QCOMPARE(inserted.count(), 0);
    QCOMPARE(mm.table()->rowCount(), 0);
    QVERIFY(s.models->list().empty());
  }

  void addingTwiceUpdatesTheRow() {
    test::TempStores s(nullptr);
    ModelManager mm(*s.ctx);
    QAbstractItemModelTester tester(mm.table(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const AddModelResult first = mm.addFolder(fixture("tiny-chat"));
    QSignalSpy inserted(mm.table(), &QAbstractItemModel::rowsInserted);
    QSignalSpy changed(mm.table(), &QAbstractItemModel::dataChanged);
    const AddModelResult again = mm.addFolder(fixture("tiny-chat") + "/.");  // same folder
    QVERIFY(again.ok);
    QVERIFY(again.updated);
    QCOMPARE(again.id, first.id);
    QCOMPARE(inserted.count(), 0);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(mm.table()->rowCount(), 1);
    QCOMPARE(s.models->list().size(), size_t{1});
  }

  void estimatesMemoryAndRefusesWhatWillNotFit() {
    test::TempStores s(nullptr);
    ModelManager mm(*s.ctx);
    const qint64 id = mm.addFolder(fixture("tiny-chat")).id;
    // KV grows with the context: 4096 tokens need more than 256.
    const MemoryCheck small = mm.checkMemory(id, "cpu", 256, qint64(1) << 40);
    const MemoryCheck big = mm.checkMemory(id, "cpu", 4096, qint64(1) << 40);
    QVERIFY(small.fits);
    QVERIFY(small.reason.isEmpty());
    QVERIFY(big.kv_cache > small.kv_cache);
    QCOMPARE(big.weights, small.weights);
    QCOMPARE(big.required, big.weights + big.kv_cache + big.activations);
    QVERIFY(small.summary.contains("256 tokens"));
    // A budget between the two: the short context fits, the long one is refused with the reason.
    const qint64 budget = (small.required + big.required) / 2;
    const MemoryCheck refused = mm.checkMemory(id, "cpu", 4096, budget);
    QVERIFY(!refused.fits);
    QVERIFY2(refused.reason.contains("will not fit"), qPrintable(refused.reason));
    QVERIFY(refused.reason.contains(format_bytes(big.required)));
    QVERIFY(refused.reason.contains("RAM"));
    QVERIFY(mm.checkMemory(id, "cpu", 256, budget).fits);
    // CUDA: BF16 weights and cache, compared with GPU memory.
    const MemoryCheck gpu = mm.checkMemory(id, "cuda", 4096, budget / 100);
    QVERIFY(!gpu.fits);
    QVERIFY(gpu.reason.contains("GPU memory"));
    QVERIFY(gpu.kv_cache < big.kv_cache);  // BF16 cache is half the F32 one
    // With an engine: load() refuses before asking it anything.
    EngineThread engine;
    test::TempStores s2(engine.controller());
    ModelManager mm2(*s2.ctx);
    const qint64 id2 = mm2.addFolder(fixture("tiny-chat")).id;
    test::ControllerRelay relay(engine.controller());
    QSignalSpy started(&relay, &test::ControllerRelay::loadStarted);
    QString reason;
    QVERIFY(!mm2.load(id2, "cpu", 4096, &reason, budget));
    QVERIFY(reason.contains("will not fit"));
    QTest::qWait(100);
    QCOMPARE(started.count(), 0);
    QVERIFY(!engine.controller()->isLoaded());
    QCOMPARE(cell(mm2.table(), 0, ModelTableModel::State), QString());
  }

  void estimatesFp8WeightsAndKvCache() {
    test::TempStores s(nullptr);
    ModelManager mm(*s.ctx);
    const qint64 id = mm.addFolder(fixture("qwen3")).id;
    const qint64 fp8 = mm.addFolder(fixture("../models-fp8/qwen3-channel")).id;
    const qint64 big = qint64(1) << 40;
    LoadPrecision q;
    q.quantization = LoadQuantization::Fp8;
    LoadPrecision kv;
    kv.kv_cache = KvCacheDtype::Fp8;
    const MemoryCheck bf16 = mm.checkMemory(id, "cuda", 4096, big), on_load = mm.checkMemory(id, "cuda", 4096, big, q);
    const MemoryCheck folder = mm.checkMemory(fp8, "cuda", 4096, big), kv8 = mm.checkMemory(id, "cuda", 4096, big, kv);
    // FP8 projections: less than BF16, and what the FP8 folder stores within its scales' bytes.
    QVERIFY(on_load.weights < bf16.weights);
    QVERIFY(std::abs(on_load.weights - folder.weights) < bf16.weights / 20);
    // An E4M3 cache is half the BF16 one on CUDA; the CPU's stays float32.
    QCOMPARE(kv8.kv_cache * 2, bf16.kv_cache);
    QCOMPARE(mm.checkMemory(id, "cpu", 4096, big, kv).kv_cache, mm.checkMemory(id, "cpu", 4096, big).kv_cache);
    // INT8 and INT4 on load: a byte and a bit over half a byte per projection weight.
    LoadPrecision i8, i4;
    i8.quantization = LoadQuantization::Int8;
    i4.quantization = LoadQuantization::Int4;
    const MemoryCheck w8 = mm.checkMemory(id, "cpu", 4096, big, i8), w4 = mm.checkMemory(id, "cpu", 4096, big, i4);
    QCOMPARE(w8.weights, mm.checkMemory(id, "cpu", 4096, big, q).weights);  // FP8 is a byte a weight too
    QVERIFY(w4.weights < w8.weights);
    QVERIFY(w4.weights > w8.weights / 2);
  }

  void loadsWithFp8WeightsAndKvCache() {
    EngineThread engine;
    test::TempStores s(engine.controller());
    ModelManager mm(*s.ctx);
    const qint64 id = mm.addFolder(fixture("tiny-chat")).id;
    const qint64 fp8 = mm.addFolder(fixture("../models-fp8/qwen3-block")).id;
    QVERIFY(fp8 != 0);
    QVERIFY(mm.table()->find(fp8)->facts->quantization.contains("block 128x128"));
    test::ControllerRelay relay(engine.controller());
    QSignalSpy loaded(&relay, &test::ControllerRelay::modelLoaded);
    LoadPrecision p;
    p.quantization = LoadQuantization::Fp8;
    p.kv_cache = KvCacheDtype::Fp8;
    // An FP8 folder is not quantized again.
    QString reason;
    QVERIFY(!mm.load(fp8, "cpu", 1024, &reason, std::nullopt, p));
    QVERIFY2(reason.contains("already quantized"), qPrintable(reason));
    QVERIFY2(mm.load(id, "cpu", 1024, &reason, std::nullopt, p), qPrintable(reason));
    QVERIFY(loaded.wait(30000));
    const auto summary = engine.controller()->loadedModel();
    QVERIFY(summary.has_value());
    QVERIFY2(summary->quantization.contains("fp8 e4m3 per-channel"), qPrintable(summary->quantization));
    QCOMPARE(summary->kv_cache, KvCacheDtype::Fp8);
    mm.unload();
    // INT4 weights and the 8-bit KV cache, quantized as the model loads on the CPU.
    p.quantization = LoadQuantization::Int4;
    p.kv_cache = KvCacheDtype::Int8;
    QVERIFY2(mm.load(id, "cpu", 1024, &reason, std::nullopt, p), qPrintable(reason));
    QVERIFY(loaded.wait(30000));
    const auto int4 = engine.controller()->loadedModel();
    QVERIFY(int4.has_value());
    QVERIFY2(int4->quantization.contains("int4"), qPrintable(int4->quantization));
    QCOMPARE(int4->kv_cache, KvCacheDtype::Int8);
    mm.unload();
  }

  void loadsUnloadsAndRemoves() {
    EngineThread engine;
    test::TempStores s(engine.controller());
    ModelManager mm(*s.ctx);
    QAbstractItemModelTester tester(mm.table(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const qint64 id = mm.addFolder(fixture("tiny-chat")).id;
    const qint64 other = mm.addFolder(fixture("qwen3_moe")).id;
    test::ControllerRelay relay(engine.controller());
    QSignalSpy loaded(&relay, &test::ControllerRelay::modelLoaded);
    QSignalSpy unloaded(&relay, &test::ControllerRelay::modelUnloaded);
    QSignalSpy changed(mm.table(), &QAbstractItemModel::dataChanged);
    QString reason;
    QVERIFY2(mm.load(id, "cpu", 1024, &reason), qPrintable(reason));
    QVERIFY(loaded.wait(30000));
    const int row = mm.table()->rowOf(id);
    QTRY_COMPARE(cell(mm.table(), row, ModelTableModel::State), QString("loaded on CPU"));
    QVERIFY(changed.count() >= 2);  // "loading…", then "loaded on CPU"
    QCOMPARE(mm.loadedId(), id);
    QCOMPARE(engine.controller()->loadedModel()->context_length, 1024);
    QVERIFY(s.models->get(id).last_loaded_at > 0);
    // A loaded model cannot be removed; another one can.
    QString error;
    QVERIFY(!mm.removeModel(id, &error));
    QVERIFY(error.contains("unload"));
    QSignalSpy removed(mm.table(), &QAbstractItemModel::rowsRemoved);
    QVERIFY(mm.removeModel(other));
    QCOMPARE(removed.count(), 1);
    QCOMPARE(mm.table()->rowCount(), 1);
    mm.unload();
    QVERIFY(unloaded.wait(10000));
    QTRY_COMPARE(cell(mm.table(), mm.table()->rowOf(id), ModelTableModel::State), QString());
    QVERIFY(mm.removeModel(id));
    QCOMPARE(mm.table()->rowCount(), 0);
    QVERIFY(s.models->list().empty());
  }

  void cudaIsOfferedOnlyWhereItWorks() {
    const CudaStatus cuda = cuda_status();
    test::TempStores s(nullptr);
    ModelManager mm(*s.ctx);
    const qint64 id = mm.addFolder(fixture("tiny-chat")).id;
    if (!cuda.usable) {
      QVERIFY(!cuda.reason.isEmpty());
      QString reason;
      QVERIFY(!mm.load(id, "cuda", 256, &reason));
      QVERIFY2(reason.contains(cuda.reason), qPrintable(reason));
    }
    // The test binary has no lib/inferdesk beside it: the module is reported as not installed.
    QVERIFY(!cuda.built);
    QVERIFY2(cuda.reason.contains("inferdesk-cuda package"), qPrintable(cuda.reason));
  }

  void registryReloadsInANewManager() {
    test::TempStores s(nullptr);
    {
      ModelManager mm(*s.ctx);
      QVERIFY(mm.addFolder(fixture("tiny-chat")).ok);
      QVERIFY(mm.addFolder(fixture("qwen3_moe")).ok);
    }
    ModelManager again(*s.ctx);
    QAbstractItemModelTester tester(again.table(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(again.table()->rowCount(), 2);
    QStringList names;
    for (int r = 0; r < 2; ++r) names << cell(again.table(), r, ModelTableModel::Name);
    names.sort();
    QCOMPARE(names, QStringList({"qwen3_moe", "tiny-chat"}));
    // A registry record whose facts are unreadable still shows, marked unknown.
    s.models->add("/somewhere/else", "odd", "llama", "{not json");
    again.reload();
    QCOMPARE(again.table()->rowCount(), 3);
    const int odd = [&] {
      for (int r = 0; r < 3; ++r)
        if (cell(again.table(), r, ModelTableModel::Name) == "odd") return r;
      return -1;
    }();
    QVERIFY(odd >= 0);
    QVERIFY(cell(again.table(), odd, ModelTableModel::Architecture).contains("unknown"));
  }

  void pageShowsFactsEstimateAndBackends() {
    EngineThread engine;
    test::TempStores s(engine.controller());
    ModelsPage page(*s.ctx);
    page.resize(1100, 720);
    QVERIFY(page.manager()->addFolder(fixture("qwen3_moe")).ok);
    const qint64 id = page.manager()->addFolder(fixture("tiny-chat")).id;
    QVERIFY(page.selectModel(id));
    QCOMPARE(page.selectedId(), id);
    QVERIFY2(page.estimateLabel()->text().contains("fits"), qPrintable(page.estimateLabel()->text()));
    // Typing a context longer than the model's is kept and explained, not silently cut.
    page.contextBox()->setFocus();
    page.contextBox()->selectAll();
    QTest::keyClicks(page.contextBox(), "100000");
    QCOMPARE(page.contextBox()->value(), 100000);
    QVERIFY2(page.estimateLabel()->text().contains("longer than this model's context of 4096 tokens"),
             qPrintable(page.estimateLabel()->text()));
    QVERIFY(!page.loadButton()->isEnabled());
    auto* items = qobject_cast<QStandardItemModel*>(page.backendBox()->model());
    QVERIFY(items);
    QCOMPARE(items->item(1)->isEnabled(), cuda_status().usable);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    // Load through the button and watch the state column.
    test::ControllerRelay relay(engine.controller());
    QSignalSpy loaded(&relay, &test::ControllerRelay::modelLoaded);
    page.contextBox()->setValue(2048);
    QTest::mouseClick(page.loadButton(), Qt::LeftButton);
    QVERIFY(loaded.wait(30000));
    QTRY_COMPARE(cell(page.manager()->table(), page.manager()->table()->rowOf(id), ModelTableModel::State),
                 QString("loaded on CPU"));
    QCOMPARE(engine.controller()->loadedModel()->context_length, 2048);
    QTRY_VERIFY(page.statusLabel()->text().contains("loaded"));
    QVERIFY(!test::saveScreenshot(&page, "models_page").isEmpty());
  }

  // Unloading while a reply is written asks first; Cancel keeps the model, confirming unloads it
  // and the status line says so. Without running requests it unloads at once. The last loaded
  // model is remembered for the next start and forgotten by an explicit unload.
  void unloadWhileReplyingAsksFirst() {
    EngineThread engine;
    test::TempStores s(engine.controller());
    ModelsPage page(*s.ctx);
    page.resize(1100, 720);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    const qint64 id = page.manager()->addFolder(fixture("tiny-chat")).id;
    QVERIFY(page.selectModel(id));
    test::ControllerRelay relay(engine.controller());
    QSignalSpy loaded(&relay, &test::ControllerRelay::modelLoaded);
    QSignalSpy unloaded(&relay, &test::ControllerRelay::modelUnloaded);
    QSignalSpy finished(&relay, &test::ControllerRelay::finished);
    QVERIFY(page.manager()->load(id, "cpu", 4096));
    QVERIFY(loaded.wait(30000));
    const auto last = page.manager()->lastModel().last();
    QVERIFY(last.has_value());
    QCOMPARE(last->id, id);
    QCOMPARE(last->context, 4096);
    EngineController* c = engine.controller();
    const auto ids = c->renderPrompt({{"user", "Write a long story."}}).ids;
    // The reply must still be being written at every click below, however slow the machine: the
    // engine thread is held until the unload destroys the engine.
    EngineGate gate;
    QVERIFY(gate.hold(c, ids));
    SamplingParams p;
    p.max_tokens = 4000;
    p.ignore_eos = true;
    QMetaObject::invokeMethod(c, [c, ids, p] { c->submit("long", ids, p); });
    QTRY_VERIFY(c->activeRequests() == 1);
    for (const bool confirm : {false, true}) {
      QTRY_VERIFY(page.unloadButton()->isEnabled());
      QTest::mouseClick(page.unloadButton(), Qt::LeftButton);
      QMessageBox* box = nullptr;
      QTRY_VERIFY((box = page.findChild<QMessageBox*>("unloadConfirmation")) != nullptr);
      QVERIFY2(box->text().contains("tiny-chat is writing a reply"), qPrintable(box->text()));
      if (!confirm) {  // loading another model would stop it too: the same question
        box->button(QMessageBox::Cancel)->click();
        QTRY_VERIFY(page.findChild<QMessageBox*>("unloadConfirmation") == nullptr);
        QTest::mouseClick(page.loadButton(), Qt::LeftButton);
        QTRY_VERIFY((box = page.findChild<QMessageBox*>("unloadConfirmation")) != nullptr);
        // One list: buttons() returns a new one at each call.
        const QList<QAbstractButton*> buttons = box->buttons();
        QVERIFY(std::any_of(buttons.begin(), buttons.end(),
                            [](QAbstractButton* b) { return b->text() == "Stop and load"; }));
      }
      QAbstractButton* choice = nullptr;
      for (QAbstractButton* b : box->buttons())
        if (b->text() == (confirm ? "Stop and unload" : "Cancel")) choice = b;
      QVERIFY(choice);
      choice->click();
      QTRY_VERIFY(page.findChild<QMessageBox*>("unloadConfirmation") == nullptr);
      if (!confirm) {
        QTest::qWait(200);
        QVERIFY(c->isLoaded());
        QCOMPARE(unloaded.count(), 0);
      }
    }
    QVERIFY(unloaded.wait(10000));
    QTRY_COMPARE(finished.count(), 1);
    QCOMPARE(finished.first().at(1).value<GenerationStats>().finish_reason, QString("cancelled"));
    QTRY_VERIFY(page.statusLabel()->text().contains("tiny-chat was unloaded"));
    QVERIFY(!page.manager()->lastModel().last().has_value());
    // Idle: no question.
    QVERIFY(page.manager()->load(id, "cpu", 1024));
    QVERIFY(loaded.wait(30000));
    QTRY_VERIFY(page.unloadButton()->isEnabled());
    QTest::mouseClick(page.unloadButton(), Qt::LeftButton);
    QVERIFY(unloaded.wait(10000));
    QVERIFY(page.findChild<QMessageBox*>("unloadConfirmation") == nullptr);
  }
};

QTEST_MAIN(TestModelManager)
#include "test_model_manager.moc"
