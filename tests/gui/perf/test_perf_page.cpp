// Performance page: after generating, every chart's series has points with the figures the engine
// reported; rates fall to zero and the header says "idle" once nothing runs (a fake clock moves
// time); counts get whole-number ticks; the expert heatmap shows routed tokens for MoE models
// (qwen3_moe; qwen2_moe with its dense layer and shared expert; token ids submitted directly: they
// have no tokenizer) and maps cells, colours and live tooltips correctly (a tooltip Qt hid for a
// focus change elsewhere comes back with the next count).
#include <QGraphicsScene>
#include <QHelpEvent>
#include <QLabel>
#include <QLineSeries>
#include <QSignalSpy>
#include <QToolTip>
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "gui/app/elided_label.h"
#include "gui/perf/expert_heatmap.h"
#include "gui/perf/perf_page.h"
#include "gui/perf/rate_meter.h"
#include "gui/perf/time_series_chart.h"
#include "tests/gui/support/gui_test_support.h"

using namespace inferdesk;
using namespace inferdesk::gui;
using inferdesk::gui::test::fixture;

namespace {

double maxY(const QLineSeries* s) {
  double m = -1;
  for (const QPointF& p : s->points()) m = std::max(m, p.y());
  return m;
}

SamplingParams params(int max_tokens) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.seed = 7;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

// Loads `model` on the controller's thread (KV cache for all requests at once) and submits `n`
// requests of `tokens` tokens each.
void start(EngineController* c, test::ControllerRelay& relay, const QString& model, int n, int tokens) {
  QSignalSpy loaded(&relay, &test::ControllerRelay::modelLoaded);
  QMetaObject::invokeMethod(c, [c, model] { c->loadModel(model, "cpu", 4096, qint64(64) << 20); });
  QVERIFY(loaded.wait(30000));
  for (int i = 0; i < n; ++i) {
    const std::vector<int32_t> ids = {1, 5, 9, 13, int32_t(20 + i), 7, 3};
    const QString key = QString("req%1").arg(i);
    QMetaObject::invokeMethod(c, [c, ids, key, tokens] { c->submit(key, ids, params(tokens)); });
  }
}

// Stops the requests start() submitted and waits for all of them to finish.
void stopAll(EngineController* c, test::ControllerRelay& relay, int n) {
  QSignalSpy finished(&relay, &test::ControllerRelay::finished);
  for (int i = 0; i < n; ++i) c->stop(QString("req%1").arg(i));  // thread-safe
  while (finished.count() < n) QVERIFY(finished.wait(30000));
}

// A shown performance page fed by a controller on its own thread.
struct LivePage {
  EngineThread engine;
  test::TempStores stores{engine.controller()};
  PerfPage page{*stores.ctx};
  test::ControllerRelay relay{engine.controller()};
  EngineController* c = engine.controller();
  LivePage() {
    page.resize(1200, 800);
    page.show();
  }
};

// Time moved by hand.
class FakeClock : public Clock {
 public:
  double now() const override { return t; }
  double t = 100.0;
};

EngineStats stats_at(int64_t generated, int running) {
  EngineStats s;
  s.total_generated_tokens = generated;
  s.running = running;
  s.kv_blocks_total = 64;
  s.process_rss_bytes = 50 << 20;
  return s;
}

}  // namespace

class TestPerfPage : public QObject {
  Q_OBJECT

 private slots:
  void chartsFillWhileGenerating() {
    LivePage live;
    PerfPage& page = live.page;
    start(live.c, live.relay, fixture("tiny-chat"), 4, 3000);
    // While the requests run, the charts show them (stats arrive every 100 ms).
    QTRY_VERIFY_WITH_TIMEOUT(maxY(page.runningSeries()) >= 4, 30000);
    QTRY_VERIFY_WITH_TIMEOUT(maxY(page.decodeSeries()) > 0, 30000);
    QTRY_VERIFY_WITH_TIMEOUT(maxY(page.kvUsedSeries()) >= 4, 30000);  // a block per request at least
    stopAll(live.c, live.relay, 4);
    QCOMPARE(page.ttftSeries()->count(), 4);  // one point per request
    QCOMPARE(page.requestsSeen(), 4);
    for (const QPointF& p : page.ttftSeries()->points()) QVERIFY(p.y() > 0);
    const int total_blocks = live.c->loadedModel()->kv_blocks;
    QCOMPARE(maxY(page.kvTotalSeries()), double(total_blocks));
    QVERIFY(maxY(page.processMemorySeries()) > 1.0);  // MiB
    QVERIFY(!page.gpuMemorySeries()->isVisible());    // CPU model: no GPU line
    QVERIFY(page.waitingSeries()->count() > 0);
    QCOMPARE(page.heatmap()->layers(), 0);  // dense model: no heatmap
    // Once nothing runs the rate falls to zero and the header says so.
    QTRY_VERIFY_WITH_TIMEOUT(page.headline()->text().contains("idle"), 10000);
    QCOMPARE(page.decodeRate(), 0.0);
    QCOMPARE(page.decodeSeries()->points().last().y(), 0.0);
    QVERIFY(!test::saveScreenshot(&page, "perf_page_dense").isEmpty());
  }

  // With a fake clock: 100 tokens every 0.1 s is 1000 tokens/s; then nothing for 3 s, and the rate
  // and the chart go to zero (within the 2 s window) while the header says "idle".
  void ratesFallToZeroWhenNothingRuns() {
    test::TempStores s(nullptr);
    FakeClock clock;
    PerfPage page(*s.ctx, nullptr, &clock);
    int64_t total = 0;
    page.onStats(stats_at(total, 1));
    for (int i = 0; i < 30; ++i) {
      clock.t += 0.1;
      total += 100;
      page.onStats(stats_at(total, 1));
    }
    QVERIFY2(std::abs(page.decodeRate() - 1000.0) < 1.0, qPrintable(QString::number(page.decodeRate())));
    QVERIFY(page.headline()->text().contains("1000.0</b> tokens/s decode"));
    double previous = page.decodeRate();
    for (int i = 0; i < 30; ++i) {  // idle: the counters stop, stats keep coming
      clock.t += 0.1;
      page.onStats(stats_at(total, 0));
      QVERIFY(page.decodeRate() <= previous);
      previous = page.decodeRate();
    }
    QCOMPARE(page.decodeRate(), 0.0);
    QCOMPARE(page.decodeSeries()->points().last().y(), 0.0);
    QVERIFY2(page.headline()->text().contains("idle"), qPrintable(page.headline()->text()));
    // No stats at all for a whole window (a stalled controller) also reads as zero.
    RateMeter meter(clock);
    meter.update(0);
    clock.t += 0.5;
    meter.update(500);
    QCOMPARE(meter.rate(), 1000.0);
    clock.t += 2.5;
    QCOMPARE(meter.rate(), 0.0);
    meter.update(10);  // a new model: the counter starts over
    clock.t += 0.1;
    meter.update(20);
    QVERIFY(std::abs(meter.rate() - 100.0) < 1e-6);
  }

  void countsHaveWholeNumberTicks() {
    test::TempStores s(nullptr);
    FakeClock clock;
    PerfPage page(*s.ctx, nullptr, &clock);
    for (int running : {1, 1, 2, 1, 0, 12, 3}) {
      clock.t += 0.1;
      page.onStats(stats_at(0, running));
      const QValueAxis* y = page.requestsChart()->yAxis();
      QVERIFY2(y->tickInterval() >= 1 && std::floor(y->tickInterval()) == y->tickInterval(),
               qPrintable(QString::number(y->tickInterval())));
      QCOMPARE(y->labelFormat(), QString("%.0f"));
    }
  }

  // qwen2_moe: 3 layers, layer 1 dense (mlp_only_layers), 8 experts, 2 per token, a shared expert.
  void heatmapOfQwen2MoeShowsDenseLayerAndSharedExpert() {
    LivePage live;
    PerfPage& page = live.page;
    QSignalSpy loaded(&live.relay, &test::ControllerRelay::modelLoaded);
    QMetaObject::invokeMethod(live.c,
                              [c = live.c] { c->loadModel(fixture("qwen2_moe"), "cpu", 4096, qint64(64) << 20); });
    QVERIFY(loaded.wait(30000));
    QTRY_COMPARE(page.heatmap()->layers(), 3);
    ExpertHeatmap* map = page.heatmap();
    QCOMPARE(map->experts(), 8);
    QCOMPARE(map->columns(), 9);  // + the shared expert
    QCOMPARE(map->moeLayerCount(), 2);
    QVERIFY(!map->isMoeLayer(1));
    QCOMPARE(map->totalRouted(), int64_t{0});
    const QString caption = page.heatmapCaption()->text();
    QVERIFY2(caption.contains("2 MoE layers \u00d7 8 experts, 2 per token") && caption.contains("layer 1 dense") &&
                 caption.contains("shared expert"),
             qPrintable(caption));
    QVERIFY(map->cellText(1, 3).contains("dense layer"));
    QVERIFY(!test::saveScreenshot(&page, "perf_page_qwen2_moe_before").isEmpty());
    for (int i = 0; i < 2; ++i) {
      const std::vector<int32_t> ids = {1, 5, 9, 13, int32_t(20 + i), 7, 3};
      const QString key = QString("req%1").arg(i);
      QMetaObject::invokeMethod(live.c, [c = live.c, ids, key] { c->submit(key, ids, params(3000)); });
    }
    QTRY_VERIFY_WITH_TIMEOUT(map->totalRouted() > 0, 30000);
    // The tooltip of a cell follows its count while the mouse rests there (the most used expert
    // of layer 0: its count grows soonest).
    int hot = 0;
    for (int e = 1; e < 8; ++e)
      if (map->count(0, e) > map->count(0, hot)) hot = e;
    const QRect cell = map->cellRect(0, hot);
    QHelpEvent help(QEvent::ToolTip, cell.center(), map->mapToGlobal(cell.center()));
    QCoreApplication::sendEvent(map, &help);
    const QString first = map->shownToolTip();
    QVERIFY(first.startsWith(QString("layer 0, expert %1: ").arg(hot)));
    QTRY_VERIFY_WITH_TIMEOUT(map->shownToolTip() != first, 30000);
    QCOMPARE(map->shownToolTip(), map->cellText(0, hot));
    stopAll(live.c, live.relay, 2);
    QTest::qWait(300);
    int64_t layer0 = 0;
    for (int e = 0; e < 8; ++e) {
      QCOMPARE(map->count(1, e), int64_t{0});  // the dense layer routes nothing
      layer0 += map->count(0, e);
    }
    QVERIFY(layer0 > 0);
    QCOMPARE(map->count(0, 8), layer0 / 2);  // the shared expert sees every token once
    QVERIFY(map->cellText(0, 8).contains("shared expert"));
    QVERIFY(!test::saveScreenshot(&page, "perf_page_qwen2_moe").isEmpty());
  }

  void heatmapShowsRoutedTokensOfAMoEModel() {
    LivePage live;
    PerfPage& page = live.page;
    start(live.c, live.relay, fixture("qwen3_moe"), 3, 3000);
    QTRY_VERIFY_WITH_TIMEOUT(page.heatmap()->nonZeroCells() > 0, 30000);
    QTRY_VERIFY_WITH_TIMEOUT(maxY(page.decodeSeries()) > 0, 30000);
    stopAll(live.c, live.relay, 3);
    QTest::qWait(300);  // the last statistics after the stop
    ExpertHeatmap* map = page.heatmap();
    QCOMPARE(map->layers(), 2);
    QCOMPARE(map->experts(), 8);
    // Every routed token goes to 2 experts per layer: each layer's counts add up to the same total.
    int64_t layer0 = 0, layer1 = 0;
    for (int e = 0; e < 8; ++e) {
      layer0 += map->count(0, e);
      layer1 += map->count(1, e);
    }
    QVERIFY(layer0 > 0);
    QCOMPARE(layer0, layer1);
    QCOMPARE(layer0 % 2, int64_t{0});
    QVERIFY(map->cellText(0, 0).startsWith("layer 0, expert 0: "));
    QVERIFY(!test::saveScreenshot(&page, "perf_page_moe").isEmpty());
  }

  // Axes keep about five round ticks however the values grow or shrink (a wide range with a small
  // tick interval would build thousands of labels and stall the UI thread).
  void chartAxesKeepFewRoundTicks() {
    TimeSeriesChart chart("t", "x", "y", 120);
    QLineSeries* a = chart.addSeries("a", Qt::blue);
    QLineSeries* b = chart.addSeries("b", Qt::red);
    // The number of ticks at every intermediate state the axes pass through.
    double most_ticks = 0;
    for (QValueAxis* axis : {chart.xAxis(), chart.yAxis()}) {
      auto watch = [&most_ticks, axis] {
        if (axis->tickType() == QValueAxis::TicksDynamic && axis->tickInterval() > 0)
          most_ticks = std::max(most_ticks, (axis->max() - axis->min()) / axis->tickInterval());
      };
      connect(axis, &QValueAxis::rangeChanged, this, watch);
      connect(axis, &QValueAxis::tickIntervalChanged, this, watch);
    }
    const double values[] = {0.3, 7, 480, 123456, 2, 0.01, 9e6, 0};
    double x = 0;
    for (double v : values) {
      for (int i = 0; i < 3; ++i, x += 0.5) {
        chart.append(a, x, v);
        chart.append(b, x, v / 2);
      }
      chart.commit();
      for (QValueAxis* axis : {chart.xAxis(), chart.yAxis()}) {
        QCOMPARE(axis->tickType(), QValueAxis::TicksDynamic);
        const double ticks = (axis->max() - axis->min()) / axis->tickInterval();
        QVERIFY2(ticks >= 1 && ticks <= 10, qPrintable(QString("%1 ticks for %2").arg(ticks).arg(v)));
      }
      QVERIFY(chart.yAxis()->max() >= v);  // everything is in view
      // Labels are exact: as many decimals as the interval has ("%.2f" for 0.25, "%.0f" for 50).
      const double step = chart.yAxis()->tickInterval();
      const QString label = QString::asprintf(qPrintable(chart.yAxis()->labelFormat()), step);
      QCOMPARE(label.toDouble(), step);
    }
    QVERIFY2(most_ticks <= 10, qPrintable(QString("an axis passed through %1 ticks").arg(most_ticks)));
    QCOMPARE(a->count(), 24);
    QCOMPARE(b->points().last(), QPointF(x - 0.5, 0));
    // The window: points older than 120 s go, except the last one before it (the line enters
    // from the left edge).
    chart.append(a, 1000, 1);
    chart.commit();
    QCOMPARE(a->count(), 2);
    QCOMPARE(a->points().first(), QPointF(x - 0.5, 0));
    QCOMPARE(chart.xAxis()->max(), 1000.0);
    QCOMPARE(chart.xAxis()->min(), 880.0);
  }

  void heatmapCellsColoursAndTooltips() {
    ExpertHeatmap map;
    map.resize(400, 200);
    QCOMPARE(map.nonZeroCells(), 0);
    // 3 layers x 4 experts, layer-major.
    std::vector<int64_t> counts = {0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 100};
    map.setCounts(3, 4, counts);
    QCOMPARE(map.layers(), 3);
    QCOMPARE(map.experts(), 4);
    QCOMPARE(map.nonZeroCells(), 8);
    QCOMPARE(map.count(1, 2), int64_t{6});
    QCOMPARE(map.count(2, 3), int64_t{100});
    QCOMPARE(map.count(5, 0), int64_t{0});  // out of range: 0, no crash
    for (int l = 0; l < 3; ++l)
      for (int e = 0; e < 4; ++e) {
        const QRect r = map.cellRect(l, e);
        QVERIFY(!r.isEmpty());
        QCOMPARE(map.cellAt(r.center()), QPoint(l, e));
      }
    QCOMPARE(map.cellAt(QPoint(1, 1)), QPoint(-1, -1));  // the label margin is no cell
    QCOMPARE(map.cellText(2, 3), QString("layer 2, expert 3: 100 tokens (100.0% of the layer's routing)"));
    QVERIFY(map.cellText(1, 0).contains("(18.2%"));  // 4 of 22
    QVERIFY(map.cellText(3, 0).isEmpty());
    QVERIFY(ExpertHeatmap::colorAt(0.0) != ExpertHeatmap::colorAt(1.0));
    QVERIFY(ExpertHeatmap::colorAt(1.0).lightness() > ExpertHeatmap::colorAt(0.0).lightness());
    // The painted image: the hottest cell has the top colour, a zero cell the neutral grey.
    const QImage img = map.grab().toImage();
    QCOMPARE(img.pixelColor(map.cellRect(2, 3).center()), ExpertHeatmap::colorAt(1.0));
    QCOMPARE(img.pixelColor(map.cellRect(0, 0).center()), QColor(236, 236, 236));
    // Sizes that do not match clear the map instead of reading out of bounds.
    map.setCounts(3, 5, counts);
    QCOMPARE(map.layers(), 0);
    QCOMPARE(map.nonZeroCells(), 0);
  }

  // Qt hides a tooltip on any focus change in the application, and a chart on the performance
  // page gives its scene focus (a FocusIn to the QGraphicsScene) when an axis gains a grid line:
  // the tooltip of the cell the mouse rests on comes back with the next count. One the user
  // dismissed with a click stays away.
  void heatmapTooltipComesBackAfterAFocusChangeElsewhere() {
    ExpertHeatmap map;
    map.resize(400, 200);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    std::vector<int64_t> counts = {1, 2, 3, 4, 5, 6, 7, 8};
    map.setCounts(2, 4, counts);
    const QRect cell = map.cellRect(0, 1);
    QHelpEvent help(QEvent::ToolTip, cell.center(), map.mapToGlobal(cell.center()));
    QCoreApplication::sendEvent(&map, &help);
    QVERIFY(QToolTip::isVisible());
    QCOMPARE(QToolTip::text(), map.cellText(0, 1));
    QGraphicsScene chart_scene;  // what QGraphicsScene::setFocus sends when a chart adds an item
    QFocusEvent focus(QEvent::FocusIn, Qt::ActiveWindowFocusReason);
    QCoreApplication::sendEvent(&chart_scene, &focus);
    QVERIFY(!QToolTip::isVisible());
    counts[1] = 20;
    map.setCounts(2, 4, counts);
    QVERIFY(QToolTip::isVisible());
    QCOMPARE(QToolTip::text(), map.cellText(0, 1));
    QVERIFY2(QToolTip::text().startsWith("layer 0, expert 1: 20 tokens"), qPrintable(QToolTip::text()));
    QCOMPARE(map.shownToolTip(), QToolTip::text());
    // A click dismisses it: later counts do not bring it back.
    QTest::mouseClick(&map, Qt::LeftButton, {}, cell.center());
    QVERIFY(!QToolTip::isVisible());
    counts[1] = 30;
    map.setCounts(2, 4, counts);
    QVERIFY(!QToolTip::isVisible());
    QVERIFY(map.shownToolTip().isEmpty());
  }
};

QTEST_MAIN(TestPerfPage)
#include "test_perf_page.moc"
