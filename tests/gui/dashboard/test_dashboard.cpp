// The engine comparison dashboard end to end against a real `inferdesk-cli serve` of tiny-chat on
// the CPU: probing detects InferDesk, a short sweep runs and is saved, the saved run loads back and
// exports as JSON with vLLM's keys, every plot renders offscreen (not one colour) and saves as PNG
// and SVG, the compare view shows two runs, the published reference data has a source per entry,
// and a chat with the server as remote provider streams a reply and stops.
#include <QCheckBox>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSignalSpy>
#include <QLineSeries>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <set>

#include "core/store/store.h"
#include "gui/chat/chat_session.h"
#include "gui/chat/conversation_model.h"
#include "gui/chat/reply_provider.h"
#include "gui/dashboard/dashboard_page.h"
#include "gui/dashboard/dashboard_runner.h"
#include "gui/dashboard/endpoint_panel.h"
#include "gui/dashboard/reference_data.h"
#include "gui/dashboard/reference_view.h"
#include "gui/dashboard/result_charts.h"
#include "gui/dashboard/results_view.h"
#include "gui/perf/time_series_chart.h"
#include "core/bench/metric_definitions.h"
#include "gui/chat/chat_page.h"
#include "gui/chat/provider_picker.h"
#include "gui/dashboard/result_file_import.h"
#include "gui/dashboard/workload_editor.h"
#include "gui/perf/nice_axis.h"
#include "gui/app/elided_label.h"
#include "gui/app/theme.h"
#include "core/remote/chat_client.h"
#include "tests/gui/support/gui_test_support.h"
#include "tests/server/support/protocol_helpers.h"
#include "tests/server/support/server_process.h"

using namespace inferdesk::gui;
using inferdesk::test::ServerProcess;

namespace {

// A plot's picture uses more than one colour (axes, labels and at least one series drawn).
bool notOneColour(const QImage& img) {
  if (img.isNull()) return false;
  const QRgb first = img.pixel(0, 0);
  int differing = 0;
  for (int y = 0; y < img.height(); y += 3)
    for (int x = 0; x < img.width(); x += 3)
      if (img.pixel(x, y) != first) ++differing;
  return differing > 50;
}

WorkloadSpec tinySweep() {
  WorkloadSpec w;
  w.preset = "test sweep";
  w.input_len = 8;
  w.output_len = 6;
  w.requests_per_point = 4;
  w.sweep = SweepKind::Concurrency;
  w.sweep_values = "1, 2, 4";
  w.seed = 3;
  w.token_id_max = 470;  // tiny-chat's vocabulary has 480 ids
  return w;
}

QString tinyChatDir() { return QString::fromStdString(ServerProcess::tiny_chat()); }

// A ShareGPT file of `n` two-turn conversations whose turns are long enough for vLLM's filter.
QString writeShareGpt(const QTemporaryDir& dir, int n) {
  nlohmann::json a = nlohmann::json::array();
  for (int i = 0; i < n; ++i)
    a.push_back({{"id", std::to_string(i)},
                 {"conversations",
                  {{{"from", "human"}, {"value", "Tell me about the number " + std::to_string(i) + " and why it matters."}},
                   {{"from", "gpt"}, {"value", "The number " + std::to_string(i) + " is a fine number to count with."}}}}});
  const QString path = dir.filePath("sharegpt.json");
  QFile f(path);
  f.open(QIODevice::WriteOnly);
  f.write(QByteArray::fromStdString(a.dump()));
  return path;
}

}  // namespace

class TestDashboard : public QObject {
  Q_OBJECT

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<test::TempStores> stores_;

  // Runs tinySweep on the page against the server; returns the saved run's id.
  std::int64_t runSweep(DashboardPage& page) {
    page.endpoints()->setForm("tiny server", QString::fromStdString(server_->url()), "tiny");
    WorkloadSpec w = tinySweep();
    page.setWorkload(w);
    QSignalSpy saved(&page, &DashboardPage::runSaved);
    QSignalSpy progress(page.runner(), &DashboardRunner::progress);
    if (!page.startRun()) return 0;
    if (!saved.wait(120000)) return 0;
    [&] {
      QVERIFY(progress.count() >= 12);  // 4 requests per point, 3 points: live progress
      QCOMPARE(progress.back().at(0).toInt(), 2);  // the last point of three
      QCOMPARE(progress.back().at(1).toInt(), 3);
    }();
    return saved.front().front().value<std::int64_t>();
  }

 private slots:
  void initTestCase() {
    server_ = std::make_unique<ServerProcess>(inferdesk::test::tiny_args({}, 256));
    stores_ = std::make_unique<test::TempStores>(nullptr);
  }

  void referenceDataHasASourceForEveryEntry() {
    const ReferenceData d = load_reference();
    QVERIFY2(d.error.isEmpty(), qPrintable(d.error));
    QVERIFY(d.engines.size() >= 5);
    QVERIFY(d.figures.size() >= 5);
    QCOMPARE(d.entriesWithoutSource(), QStringList());
    ReferenceView view(d);
    QCOMPARE(view.engines()->rowCount(), static_cast<int>(d.engines.size()));
    QVERIFY(view.findChild<QLabel*>("referenceBanner")->text().contains("not measured here"));
    // A broken edition is reported, not shown half-read.
    QTemporaryDir dir;
    QFile bad(dir.filePath("bad.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("{not json");
    bad.close();
    QVERIFY(!load_reference(bad.fileName()).error.isEmpty());
  }

  void testConnectionDetectsInferDesk() {
    EndpointPanel panel(*stores_->ctx);
    panel.setForm("tiny server", QString::fromStdString(server_->url()), "");
    QSignalSpy probed(&panel, &EndpointPanel::probed);
    panel.testConnection();
    QVERIFY(probed.wait(20000));
    QCOMPARE(probed.front().front().toBool(), true);
    QVERIFY2(panel.probeLabel()->text().contains("InferDesk"), qPrintable(panel.probeLabel()->text()));
    QVERIFY(panel.saveForm());
    const auto row = inferdesk::store::EndpointStore(*stores_->db).find("tiny server");
    QVERIFY(row.has_value());
    QCOMPARE(QString::fromStdString(row->engine), QString("InferDesk"));
    // A port nobody listens on: the reason is shown.
    panel.setForm("nobody", "http://127.0.0.1:9", "");
    panel.testConnection();
    QVERIFY(probed.wait(20000));
    QCOMPARE(probed.back().front().toBool(), false);
    QVERIFY(panel.probeLabel()->text().contains("Not reachable"));
  }

  void aSweepRunsIsSavedAndLoadsBack() {
    DashboardPage page(*stores_->ctx);
    page.resize(1200, 800);
    const auto id = runSweep(page);
    QVERIFY(id > 0);
    QCOMPARE(page.progressBar()->value(), page.progressBar()->maximum());
    const DashboardRun run = from_row(inferdesk::store::BenchStore(*stores_->db).get(id));
    QCOMPARE(run.status, std::string("complete"));
    QCOMPARE(run.points.size(), size_t(3));
    QCOMPARE(run.points[2].concurrency, 4);
    QCOMPARE(summary_value(run.points[0].summary, "completed"), 4.0);
    QVERIFY(summary_value(run.points[2].summary, "output_throughput") > 0);
    QVERIFY(run.points[1].summary.contains("p99_ttft_ms"));
    QCOMPARE(run.points[0].requests.size(), size_t(4));
    QVERIFY(!run.points[0].requests[0].chunk_s.empty());
    QVERIFY(run.machine.contains("cpu"));
    QVERIFY(run.points[1].offset_s > 0);
    // The exported JSON reads back with the same figures.
    QTemporaryDir dir;
    const QString path = dir.filePath("run.json");
    QString error;
    QVERIFY2(page.results()->exportRun(id, path, false, &error), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const DashboardRun back = import_json(f.readAll().toStdString());
    QCOMPARE(back.points.size(), size_t(3));
    QCOMPARE(summary_value(back.points[2].summary, "output_throughput"),
             summary_value(run.points[2].summary, "output_throughput"));
    QVERIFY(page.results()->exportRun(id, dir.filePath("run.csv"), true, &error));
    QFile csv(dir.filePath("run.csv"));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    QVERIFY(csv.readLine().startsWith("max_concurrency,"));
    // The live plot got the run's tok/s.
    auto* live = qobject_cast<QLineSeries*>(page.livePlot()->chart()->series().front());
    QVERIFY(live && live->count() > 0);
  }

  void plotsRenderAndSaveAndTwoRunsCompare() {
    DashboardPage page(*stores_->ctx);
    page.resize(1280, 860);
    const auto second = runSweep(page);
    QVERIFY(second > 0);
    const auto runs = inferdesk::store::BenchStore(*stores_->db).list();
    QVERIFY(runs.size() >= 2);
    ResultsView* results = page.results();
    results->compare({runs[0].id, runs[1].id});
    QCOMPARE(results->shown().size(), size_t(2));
    QCOMPARE(results->plots().size(), 5);
    page.tabs()->setCurrentWidget(results);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    for (QChartView* v : results->plots()) {
      QVERIFY2(notOneColour(v->grab().toImage()), qPrintable(v->objectName()));
      QVERIFY(!v->toolTip().isEmpty());  // the metric's definition
    }
    // Two runs: two series (or bar sets) per plot.
    QCOMPARE(results->plots().front()->chart()->series().size(), 2);
    QTemporaryDir dir;
    QString error;
    const QStringList files = results->savePlots(dir.path(), &error);
    QCOMPARE(files.size(), 10);
    for (const QString& file : files) QVERIFY2(QFileInfo(file).size() > 500, qPrintable(file));
    QVERIFY(!test::saveScreenshot(&page, "dashboard-compare").isEmpty());
    page.tabs()->setCurrentIndex(0);
    QTest::qWait(50);
    QVERIFY(!test::saveScreenshot(&page, "dashboard-run").isEmpty());
    page.tabs()->setCurrentIndex(2);
    QTest::qWait(50);
    QVERIFY(!test::saveScreenshot(&page, "dashboard-published").isEmpty());
  }

  void stopEndsARunAsStopped() {
    DashboardPage page(*stores_->ctx);
    page.endpoints()->setForm("tiny server", QString::fromStdString(server_->url()), "tiny");
    WorkloadSpec w = tinySweep();
    w.output_len = 60;
    w.requests_per_point = 40;
    w.sweep = SweepKind::None;
    w.max_concurrency = 1;
    page.setWorkload(w);
    QSignalSpy finished(page.runner(), &DashboardRunner::finished);
    QSignalSpy progress(page.runner(), &DashboardRunner::progress);
    QVERIFY(page.startRun());
    QVERIFY(progress.wait(30000));
    page.stopRun();
    QVERIFY(finished.wait(30000));
    const auto run = finished.front().front().value<DashboardRun>();
    QCOMPARE(run.status, std::string("stopped"));
    QVERIFY(summary_value(run.points.front().summary, "completed") < 40);
  }

  void remoteChatStreamsAndStops() {
    const std::int64_t chat = stores_->chats->create_chat("remote");
    ConversationModel conversation(*stores_->chats);
    ChatSession session(*stores_->ctx, conversation);
    RemoteProvider provider({"tiny server", server_->url(), "", inferdesk::remote::ApiKind::Chat, "tiny"});
    session.setProvider(&provider);
    session.setChat(chat);
    stores_->chats->set_sampling_json(chat, R"({"max_tokens":16})");
    QSignalSpy finished(&session, &ChatSession::replyFinished);
    QSignalSpy tokens(&provider, &ReplyProvider::tokensArrived);
    QVERIFY(session.send("Hello there"));
    QVERIFY(finished.wait(60000));
    const auto stats = finished.front().at(1).value<GenerationStats>();
    QVERIFY2(stats.finish_reason == "stop" || stats.finish_reason == "length", qPrintable(stats.error));
    QVERIFY(stats.tokens > 0);
    QVERIFY(stats.ttft_s > 0);
    QVERIFY(tokens.count() > 0);
    session.flushWrites();
    const auto leaf = stores_->chats->get_chat(chat).current_leaf;
    QVERIFY(!stores_->chats->get_message(leaf).content.empty());
    // Regenerate with a long reply, stopped after the first text.
    inferdesk::store::ChatStore(*stores_->db).set_sampling_json(chat, R"({"max_tokens":200})");
    QVERIFY(session.regenerateLast());
    QVERIFY(tokens.wait(30000));
    session.stop();
    QVERIFY(finished.wait(30000));
    const auto stopped = finished.back().at(1).value<GenerationStats>();
    QCOMPARE(stopped.finish_reason, QString("cancelled"));
    session.flushWrites();
    const auto msg = stores_->chats->get_message(stores_->chats->get_chat(chat).current_leaf);
    QCOMPARE(msg.status, inferdesk::store::MessageStatus::Stopped);
    session.setProvider(nullptr);
  }

  void everyPointAndTheWarmupGetTheirOwnPrompts() {
    WorkloadSpec w;
    w.sweep = SweepKind::Concurrency;
    w.sweep_values = "1, 2";
    w.requests_per_point = 3;
    w.warmup = 2;
    w.seed = 11;
    const PreparedBenchmark prep = prepare_benchmark(w, "tiny", {50});
    std::set<std::string> bodies;
    for (int32_t point : {inferdesk::bench::kWarmupPoint, 0, 1}) {
      const inferdesk::bench::RequestSet set = prep.source(point);
      QCOMPARE(set.requests.size(), size_t(point == inferdesk::bench::kWarmupPoint ? 2 : 3));
      QCOMPARE(set.prompt_seed, inferdesk::bench::point_seed(11, point));
      for (const auto& r : set.requests) bodies.insert(r.body);
    }
    QCOMPARE(bodies.size(), size_t(8));
    QCOMPARE(prepare_benchmark(w, "tiny", {50}).source(1).requests[0].body, prep.source(1).requests[0].body);
  }

  void shareGptConcurrencySweepWithATokenizer() {
    QTemporaryDir dir;
    WorkloadSpec w;
    w.dataset = Dataset::ShareGpt;
    w.sharegpt_path = writeShareGpt(dir, 6);
    w.tokenizer_dir = tinyChatDir();
    w.output_len = 5;
    w.requests_per_point = 6;
    w.sweep = SweepKind::Concurrency;
    w.sweep_values = "1, 3";
    w.warmup = 1;
    w.seed = 7;
    w.goodput = "ttft:60000";
    DashboardRunner runner;
    QSignalSpy finished(&runner, &DashboardRunner::finished);
    QSignalSpy points(&runner, &DashboardRunner::pointFinished);
    QSignalSpy progress(&runner, &DashboardRunner::progress);
    QVERIFY(runner.start({"tiny server", server_->url(), "", "tiny"}, w, "sharegpt"));
    QVERIFY(finished.wait(120000));
    const auto run = finished.front().front().value<DashboardRun>();
    QVERIFY2(run.status == "complete", run.machine.dump().c_str());
    QCOMPARE(run.points.size(), size_t(2));
    QCOMPARE(run.points[0].concurrency, 1);
    QCOMPARE(run.points[1].concurrency, 3);
    QCOMPARE(points.count(), 2);  // the warm-up request is no point
    QCOMPARE(progress.count(), 12);  // 6 measured requests per point, warm-up not counted
    for (const auto& p : run.points) {
      QCOMPARE(p.requests.size(), size_t(6));
      QCOMPARE(summary_value(p.summary, "completed"), 6.0);
      QCOMPARE(summary_value(p.summary, "total_output_tokens"), 30.0);  // ignore_eos, 5 each
      // Prompts are the conversations' first turns as text, counted by the tokenizer.
      QVERIFY(summary_value(p.summary, "total_input_tokens") >= 6 * 4);
      QCOMPARE(summary_value(p.summary, "request_goodput"), summary_value(p.summary, "request_throughput"));
    }
    QCOMPARE(run.workload.value("dataset", std::string()), std::string("sharegpt"));
    // 6 conversations for 1 warm-up + 2 x 6 requests: both points repeat prompts and say so.
    for (const auto& p : run.points)
      QVERIFY(p.summary.value("prompt_note", std::string()).find("repeat") != std::string::npos);
    QCOMPARE(run.points[1].summary.value("prompt_seed", uint64_t(0)), uint64_t(7));
    QVERIFY(run.points[1].offset_s >= summary_value(run.points[0].summary, "duration") - 1e-9);
    // A file that is not there: the run fails with the reason, nothing is measured.
    w.sharegpt_path = dir.filePath("missing.json");
    QVERIFY(runner.start({"tiny server", server_->url(), "", "tiny"}, w, "missing"));
    QVERIFY(finished.wait(30000));
    const auto failed = finished.back().front().value<DashboardRun>();
    QCOMPARE(failed.status, std::string("failed"));
    QVERIFY(failed.points.empty());
    QVERIFY(!failed.machine.value("error", std::string()).empty());
    // Text workloads without a tokenizer are refused before anything is sent.
    w.tokenizer_dir.clear();
    QVERIFY(!validate(w).isEmpty());
  }

  void editorPresetsSetTheFields() {
    WorkloadEditor editor;
    const auto presets = workload_presets();
    QCOMPARE(presets.size(), size_t(4));
    editor.applyPreset(0);
    QCOMPARE(editor.spec().input_len, 550);
    QCOMPARE(editor.spec().output_len, 150);
    editor.applyPreset(1);
    QCOMPARE(editor.spec().input_len, 2048);
    editor.applyPreset(2);
    QCOMPARE(editor.spec().max_concurrency, 0);
    QCOMPARE(editor.spec().sweep, SweepKind::None);
    QCOMPARE(editor.spec().request_rate, 0.0);  // all at once
    editor.applyPreset(3);
    const auto sweep = sweep_of(editor.spec());
    QCOMPARE(sweep.values.front(), 1.0);
    QCOMPARE(sweep.values.back(), 256.0);
    // Round trip of every field the editor shows.
    WorkloadSpec w = tinySweep();
    w.dataset = Dataset::Prefix;
    w.num_prefixes = 3;
    w.burstiness = 0.5;
    w.request_rate = 4;
    w.goodput = "ttft:100";
    w.warmup = 2;
    editor.setSpec(w);
    const WorkloadSpec back = editor.spec();
    QCOMPARE(back.dataset, Dataset::Prefix);
    QCOMPARE(back.num_prefixes, 3);
    QCOMPARE(back.burstiness, 0.5);
    QCOMPARE(back.request_rate, 4.0);
    QCOMPARE(back.goodput, QString("ttft:100"));
    QCOMPARE(back.warmup, 2);
    QCOMPARE(back.sweep_values, QString("1, 2, 4"));
    // The embedded engine's folder is the tokenizer when the field is empty.
    editor.setDefaultTokenizer("/models/x");
    QCOMPARE(editor.spec().tokenizer_dir, QString("/models/x"));
    w.sweep_values = "1, two";
    QVERIFY(!validate(w).isEmpty());
  }

  void vllmResultImportsAndCompares() {
    DashboardPage page(*stores_->ctx);
    page.resize(1280, 860);
    ResultsView* results = page.results();
    QString error;
    const QString fixture = QString(INFERDESK_SOURCE_DIR) + "/tests/bench/data/vllm_result.json";
    const auto id = results->importFile(fixture, &error);
    QVERIFY2(id > 0, qPrintable(error));
    const DashboardRun run = from_row(inferdesk::store::BenchStore(*stores_->db).get(id));
    QCOMPARE(run.points.size(), size_t(1));
    QCOMPARE(summary_value(run.points[0].summary, "output_throughput"), 80.0);
    QCOMPARE(run.points[0].concurrency, 16);
    QCOMPARE(run.model, std::string("meta-llama/Llama-3.1-8B-Instruct"));
    QCOMPARE(run.points[0].requests.size(), size_t(2));  // from vLLM's per-request lists
    QCOMPARE(run.points[0].requests[0].chunk_s.size(), size_t(3));
    // Beside a measured run in the compare view.
    std::int64_t measured = 0;
    for (const auto& r : inferdesk::store::BenchStore(*stores_->db).list())
      if (r.id != id && r.endpoint_name == "tiny server") measured = r.id;
    QVERIFY(measured > 0);
    results->compare({id, measured});
    QCOMPARE(results->shown().size(), size_t(2));
    auto* tput = qobject_cast<QLineSeries*>(results->plots().front()->chart()->series().front());
    QVERIFY(tput);
    QCOMPARE(tput->count(), 1);
    QCOMPARE(tput->at(0), QPointF(16, 80));
    // The detail table shows the other tools' metrics computed from the imported records.
    for (int i = 0; i < results->list()->count(); ++i)
      if (results->list()->item(i)->data(Qt::UserRole).toLongLong() == id) results->list()->setCurrentRow(i);
    QTableWidget* details = results->details();
    QCOMPARE(details->rowCount(), int(inferdesk::bench::metric_definitions().size()));
    QCOMPARE(details->columnCount(), 1);
    bool genai = false;
    for (int r = 0; r < details->rowCount(); ++r)
      if (details->item(r, 0)->data(Qt::UserRole).toString() == "genai_perf.request_latency") {
        genai = true;
        QVERIFY2(details->item(r, 0)->text().startsWith("2200.0"), qPrintable(details->item(r, 0)->text()));
      }
    QVERIFY(genai);
    // Broken and missing files: typed errors, nothing saved.
    QTemporaryDir dir;
    QFile bad(dir.filePath("bad.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write(R"({"completed": "many", "duration": 1})");
    bad.close();
    const auto before = inferdesk::store::BenchStore(*stores_->db).list().size();
    QCOMPARE(results->importFile(bad.fileName(), &error), std::int64_t(0));
    QVERIFY(!error.isEmpty());
    QCOMPARE(results->importFile(dir.filePath("none.json"), &error), std::int64_t(0));
    QVERIFY2(error.contains("does not exist"), qPrintable(error));
    QCOMPARE(inferdesk::store::BenchStore(*stores_->db).list().size(), before);
    // A long label is elided in the list, never scrolled sideways.
    inferdesk::store::BenchStore(*stores_->db).rename(id, std::string(300, 'x'));
    results->reload();
    page.tabs()->setCurrentWidget(results);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QListWidget* list = results->list();
    for (int i = 0; i < list->count(); ++i)
      QVERIFY(list->visualItemRect(list->item(i)).right() <= list->viewport()->width());
    QVERIFY(list->item(0)->toolTip().contains(QString(300, 'x')));
  }

  void definitionsAndTooltipsComeFromCore() {
    ResultsView view(*stores_->ctx);
    const auto& defs = inferdesk::bench::metric_definitions();
    QTableWidget* t = view.definitions();
    QCOMPARE(t->rowCount(), int(defs.size()));
    QStringList tools;
    for (int i = 0; i < t->rowCount(); ++i) {
      QCOMPARE(t->item(i, 0)->data(Qt::UserRole).toString(), QString::fromStdString(defs[i].id));
      QCOMPARE(t->item(i, 1)->text(), QString::fromStdString(defs[i].name));
      QCOMPARE(t->item(i, 3)->text(), QString::fromStdString(defs[i].definition));
      tools << t->item(i, 0)->text();
    }
    for (const char* tool : {"vLLM", "GenAI-Perf", "llmperf", "guidellm"}) QVERIFY(tools.contains(tool));
    std::unique_ptr<QChartView> plot(make_plot(PlotKind::TpotPercentiles, {}));
    QVERIFY(plot->toolTip().contains(QString::fromStdString(inferdesk::bench::find_metric("vllm.tpot")->definition).toHtmlEscaped()));
  }

  void axesHaveRoundTicks() {
    QValueAxis a;
    set_nice_range(&a, 0, 87.3, 0, true);
    QCOMPARE(a.max(), 100.0);
    QCOMPARE(a.tickInterval(), 20.0);
    QValueAxis counts;
    set_nice_range(&counts, 0, 7, 1, true, true);
    QCOMPARE(counts.tickInterval(), 2.0);
    QCOMPARE(counts.max(), 8.0);
    QCOMPARE(counts.labelFormat(), QString("%.0f"));
    // Every value axis of the saved runs' plots ends on a tick.
    const auto runs = inferdesk::store::BenchStore(*stores_->db).list();
    QVERIFY(!runs.empty());
    std::vector<DashboardRun> shown{from_row(inferdesk::store::BenchStore(*stores_->db).get(runs.back().id))};
    for (PlotKind k : {PlotKind::Throughput, PlotKind::TtftPercentiles, PlotKind::LatencyCdf, PlotKind::TokensOverTime}) {
      std::unique_ptr<QChartView> v(make_plot(k, shown));
      for (QAbstractAxis* axis : v->chart()->axes())
        if (auto* va = qobject_cast<QValueAxis*>(axis)) {
          const double ticks = va->max() / va->tickInterval();
          QVERIFY2(std::abs(ticks - std::round(ticks)) < 1e-6, qPrintable(plot_title(k)));
        }
    }
  }

  void darkThemeReachesThePlots() {
    ResultsView view(*stores_->ctx);
    const auto runs = inferdesk::store::BenchStore(*stores_->db).list();
    view.compare({runs.back().id});
    view.setPalette(darkPalette());
    QVERIFY(isDarkPalette(view.plots().front()->palette()));
    // The existing charts follow the switch (background dark, title light).
    QChart* chart = view.plots().front()->chart();
    QVERIFY(chart->backgroundBrush().color().lightness() < 100);
    QVERIFY(chart->titleBrush().color().lightness() > 150);
    view.setPalette(lightPalette());
    QVERIFY(chart->backgroundBrush().color().lightness() > 150);
  }

  void chatHeaderNamesTheRemoteModel() {
    inferdesk::store::EndpointRow row;
    row.name = "remote tiny";
    row.base_url = server_->url();
    row.model = "tiny-remote-model";
    inferdesk::store::EndpointStore(*stores_->db).save(row);
    ChatPage page(*stores_->ctx);
    const QString before = page.modelLabel()->text();
    QVERIFY(!before.contains("tiny-remote-model"));
    QVERIFY(page.providerPicker()->choose("remote tiny"));
    QVERIFY2(page.modelLabel()->text().contains("tiny-remote-model"), qPrintable(page.modelLabel()->text()));
    QVERIFY2(page.modelLabel()->toolTip().contains("remote tiny"), qPrintable(page.modelLabel()->toolTip()));
    // With no model loaded here, the composer still sends to the remote endpoint.
    QSignalSpy finished(page.session(), &ChatSession::replyFinished);
    page.composer()->setPlainText("Hello from the chat page");
    page.sendComposerText();
    QVERIFY(page.composer()->toPlainText().isEmpty());
    QVERIFY(finished.wait(60000));
    page.session()->flushWrites();
    QVERIFY(page.providerPicker()->choose(""));
    QCOMPARE(page.modelLabel()->text(), before);
    // The remote chat asks for a natural reply: no ignore_eos in its body.
    const std::string body = inferdesk::remote::chat_request_body(
        {"r", server_->url(), "", inferdesk::remote::ApiKind::Chat, "m"}, {{"user", "hi"}}, {});
    QVERIFY(body.find("ignore_eos") == std::string::npos);
  }

  void cleanupTestCase() {
    stores_.reset();
    server_.reset();
  }
};

QTEST_MAIN(TestDashboard)
#include "test_dashboard.moc"
