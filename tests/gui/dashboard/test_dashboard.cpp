// The engine comparison dashboard end to end against a real `inferdesk-cli serve` of tiny-chat on
// the CPU: probing detects InferDesk, a short sweep runs and is saved, the saved run loads back and
// exports as JSON with vLLM's keys, every plot renders offscreen (not one colour) and saves as PNG
// and SVG, the compare view shows two runs, the published reference data has a source per entry,
// and a chat with the server as remote provider streams a reply and stops.
#include <QCheckBox>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QSignalSpy>
#include <QLineSeries>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

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
  w.concurrencies = {1, 2, 4};
  w.seed = 3;
  w.token_id_max = 470;  // tiny-chat's vocabulary has 480 ids
  return w;
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
    [&] { QVERIFY(progress.count() >= 12); }();  // 4 requests per point, 3 points: live progress
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
    w.concurrencies = {1};
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

  void cleanupTestCase() {
    stores_.reset();
    server_.reset();
  }
};

QTEST_MAIN(TestDashboard)
#include "test_dashboard.moc"
