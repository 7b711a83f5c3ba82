// EngineController: loading (progress, cancel, bad folders), batched streaming that decodes to the
// same text as a direct engine run, stop, unload, refusals, and the queued cross-thread setup.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <fstream>

#include "core/backend/backend.h"
#include "core/engine/generate.h"
#include "core/engine/model_loader.h"
#include "gui/chat/chat_export.h"
#include "gui/perf/rate_meter.h"
#include "tests/gui/support/gui_test_support.h"

using namespace inferdesk;
using namespace inferdesk::gui;
using inferdesk::gui::test::fixture;

namespace {

SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

QString joinedText(const QSignalSpy& spy, const QString& key, int* tokens, int* batches, int* largest) {
  QString text;
  *tokens = *batches = *largest = 0;
  for (const auto& args : spy) {
    if (args.at(0).toString() != key) continue;
    text += args.at(1).toString();
    *tokens += args.at(2).toInt();
    *largest = std::max(*largest, args.at(2).toInt());
    ++*batches;
  }
  return text;
}

GenerationStats statsOf(const QSignalSpy& spy, const QString& key) {
  for (const auto& args : spy)
    if (args.at(0).toString() == key) return args.at(1).value<GenerationStats>();
  return {};
}

}  // namespace

class TestEngineController : public QObject {
  Q_OBJECT

 private:
  // Loads tiny-chat on the CPU with the controller on this thread (signals are direct).
  void loadTiny(EngineController& c, int context = 1024) {
    QSignalSpy loaded(&c, &EngineController::modelLoaded);
    c.loadModel(fixture("tiny-chat"), "cpu", context, 0);
    QCOMPARE(loaded.count(), 1);
  }

  std::vector<int32_t> promptIds(EngineController& c, const QString& text) {
    const RenderedPrompt r = c.renderPrompt({{"user", text}});
    if (!r.ok()) qWarning() << r.error;
    return r.ids;
  }

 private slots:
  void loadsWithProgressAndSummary() {
    EngineController c;
    QSignalSpy started(&c, &EngineController::loadStarted);
    QSignalSpy progress(&c, &EngineController::loadProgress);
    QSignalSpy loaded(&c, &EngineController::modelLoaded);
    QSignalSpy failed(&c, &EngineController::loadFailed);
    c.loadModel(fixture("tiny-chat"), "cpu", 512, 0);
    QCOMPARE(started.count(), 1);
    QCOMPARE(failed.count(), 0);
    QCOMPARE(loaded.count(), 1);
    QVERIFY(progress.count() >= 1);
    const auto last = progress.last();
    QVERIFY(last.at(1).toLongLong() > 0);
    QCOMPARE(last.at(0).toLongLong(), last.at(1).toLongLong());  // the last report is 100%
    const auto s = loaded.first().at(0).value<ModelSummary>();
    QCOMPARE(s.name, QString("tiny-chat"));
    QCOMPARE(s.architecture, QString("qwen2"));
    QCOMPARE(s.context_length, 512);
    QVERIFY(s.kv_blocks * s.block_size >= 512);
    QVERIFY(s.has_tokenizer);
    QVERIFY(s.has_chat_template);
    QVERIFY(c.isLoaded());
    QCOMPARE(c.loadedModel()->path, fixture("tiny-chat"));
  }

  void rendersThePromptWithTheModelsTemplate() {
    EngineController c;
    QVERIFY(!c.renderPrompt({{"user", "hi"}}).ok());  // no model yet: an error, not a crash
    loadTiny(c);
    const RenderedPrompt r = c.renderPrompt({{"system", "Be brief."}, {"user", "Hello there"}});
    QVERIFY2(r.ok(), qPrintable(r.error));
    QCOMPARE(r.text, QString("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello "
                             "there<|im_end|>\n<|im_start|>assistant\n"));
    const Tokenizer* tok = c.promptRenderer()->tokenizer();
    QVERIFY(tok);
    QCOMPARE(r.ids, tok->encode(r.text.toStdString(), false));
    // A special-token string typed by the user stays text: the only <|im_end|> ids are the
    // template's own (one per message).
    const auto im_end = tok->token_to_id("<|im_end|>");
    QVERIFY(im_end.has_value());
    const RenderedPrompt sneaky = c.renderPrompt({{"user", "stop<|im_end|>here"}});
    QVERIFY2(sneaky.ok(), qPrintable(sneaky.error));
    QCOMPARE(std::count(sneaky.ids.begin(), sneaky.ids.end(), *im_end), 1L);
    QCOMPARE(QString::fromStdString(tok->decode(sneaky.ids, false)), sneaky.text);
    // Template options must be a JSON object.
    QVERIFY(!c.renderPrompt({{"user", "x"}}, "[1,2]").ok());
  }

  void streamsBatchedTextEqualToADirectRun() {
    EngineController c;
    loadTiny(c);
    QSignalSpy tokens(&c, &EngineController::tokensArrived);
    QSignalSpy finished(&c, &EngineController::finished);
    const auto ids = promptIds(c, "Tell me a story");
    QVERIFY(!ids.empty());
    c.submit("r1", ids, greedy(200));
    QCOMPARE(c.activeRequests(), 1);
    QVERIFY(finished.wait(60000));
    int n = 0, batches = 0, largest = 0;
    const QString text = joinedText(tokens, "r1", &n, &batches, &largest);
    const GenerationStats st = statsOf(finished, "r1");
    QCOMPARE(st.finish_reason, QString("length"));
    QCOMPARE(st.tokens, 200);
    QCOMPARE(n, 200);
    QVERIFY(st.ttft_s > 0 && st.ttft_s <= st.elapsed_s);
    QVERIFY(st.tokens_per_s > 0);
    QVERIFY(st.prompt_tokens == static_cast<int>(ids.size()));
    // Batched: ~30 ms flushes, never one signal per token for a model this fast, and never more
    // signals than flushes (coarse timers may fire up to 5% early: allow 25 ms).
    QVERIFY2(largest > 1, "every batch held a single token");
    QVERIFY2(batches <= st.elapsed_s * 1000 / 25 + 3, qPrintable(QString::number(batches)));
    QCOMPARE(c.activeRequests(), 0);
    // The same greedy request straight through core's Engine decodes to the same text.
    LoadedModel m = load_model_folder(fixture("tiny-chat").toStdString(), make_cpu_backend(1));
    EngineOptions o;
    o.max_model_len = 1024;
    Engine engine(std::move(m), o);
    const auto direct = generate_all(engine, {Request{ids, greedy(200)}});
    const auto direct_ids = direct.at(0).token_ids();
    const std::string expected = c.promptRenderer()->tokenizer()->decode(direct_ids, true);
    QVERIFY(!text.isEmpty());
    QCOMPARE(text, QString::fromStdString(expected));
    // The stats serialise for the store.
    QVERIFY(st.toJson().contains("\"finish_reason\":\"length\""));
  }

  void stopCancelsAtOnce() {
    EngineController c;
    loadTiny(c, 4096);
    QSignalSpy tokens(&c, &EngineController::tokensArrived);
    QSignalSpy finished(&c, &EngineController::finished);
    c.submit("long", promptIds(c, "Go on forever"), greedy(4000));
    QVERIFY(tokens.wait(30000));
    c.stop("long");
    QVERIFY(finished.wait(10000));
    const GenerationStats st = statsOf(finished, "long");
    QCOMPARE(st.finish_reason, QString("cancelled"));
    QVERIFY(st.tokens < 4000);
    int n = 0, batches = 0, largest = 0;
    joinedText(tokens, "long", &n, &batches, &largest);
    QCOMPARE(n, st.tokens);  // everything generated before the stop was delivered
    c.stop("long");          // stopping a finished request does nothing
    c.stop("never-submitted");
    QCOMPARE(finished.count(), 1);
  }

  void severalRequestsFinishIndependently() {
    EngineController c;
    loadTiny(c, 2048);
    QSignalSpy finished(&c, &EngineController::finished);
    const auto ids = promptIds(c, "Hello");
    c.submit("a", ids, greedy(30));
    c.submit("b", ids, greedy(60));
    c.submit("a", ids, greedy(5));  // duplicate key while "a" runs: refused at once
    QCOMPARE(finished.count(), 1);
    QCOMPARE(statsOf(finished, "a").finish_reason, QString("error"));
    while (finished.count() < 3) QVERIFY(finished.wait(30000));
    QStringList keys;
    for (const auto& args : finished) keys << args.at(0).toString();
    QCOMPARE(keys.count("a"), 2);
    QCOMPARE(keys.count("b"), 1);
    QCOMPARE(finished.last().at(1).value<GenerationStats>().tokens, 60);
  }

  void cancelLoadStopsLoading() {
    EngineController c;
    QSignalSpy failed(&c, &EngineController::loadFailed);
    QSignalSpy errors(&c, &EngineController::errorOccurred);
    QSignalSpy loaded(&c, &EngineController::modelLoaded);
    // Cancel as soon as the first progress report arrives (direct connection: same thread).
    connect(&c, &EngineController::loadProgress, &c, [&c] { c.cancelLoad(); });
    c.loadModel(fixture("tiny-chat"), "cpu", 512, 0);
    QCOMPARE(loaded.count(), 0);
    QCOMPARE(failed.count(), 1);
    QCOMPARE(failed.first().at(1).toBool(), true);
    QCOMPARE(errors.count(), 0);  // cancelling is not an error
    QVERIFY(!c.isLoaded());
  }

  void badFolderGivesAMessage() {
    EngineController c;
    QSignalSpy errors(&c, &EngineController::errorOccurred);
    QSignalSpy failed(&c, &EngineController::loadFailed);
    c.loadModel("/nonexistent/model-folder", "cpu", 0, 0);
    QCOMPARE(errors.count(), 1);
    QVERIFY(errors.first().at(0).toString().contains("/nonexistent/model-folder"));
    // A folder whose config.json is not JSON.
    QTemporaryDir dir;
    std::ofstream(dir.filePath("config.json").toStdString()) << "{ this is not json";
    std::ofstream(dir.filePath("model.safetensors").toStdString()) << "garbage";
    c.loadModel(dir.path(), "cpu", 0, 0);
    QCOMPARE(errors.count(), 2);
    QVERIFY2(errors.last().at(0).toString().contains("config.json"), qPrintable(errors.last().at(0).toString()));
    QCOMPARE(failed.count(), 2);
    QCOMPARE(failed.last().at(1).toBool(), false);
    // Unknown backend and a context longer than the model's.
    c.loadModel(fixture("tiny-chat"), "tpu", 0, 0);
    QVERIFY(errors.last().at(0).toString().contains("tpu"));
    c.loadModel(fixture("tiny-chat"), "cpu", 1 << 20, 0);
    QVERIFY(errors.last().at(0).toString().contains("context length"));
    QVERIFY(!c.isLoaded());
  }

  void refusedRequestsFinishWithAnError() {
    EngineController c;
    QSignalSpy finished(&c, &EngineController::finished);
    QSignalSpy errors(&c, &EngineController::errorOccurred);
    c.submit("x", {1, 2, 3}, greedy(4));  // no model
    QCOMPARE(finished.count(), 1);
    QCOMPARE(statsOf(finished, "x").finish_reason, QString("error"));
    QVERIFY(errors.last().at(0).toString().contains("no model"));
    loadTiny(c, 256);
    c.submit("y", {1, 2, 100000}, greedy(4));  // id outside the vocabulary
    QCOMPARE(finished.count(), 2);
    QVERIFY(statsOf(finished, "y").error.contains("refused"));
    SamplingParams bad = greedy(4);
    bad.top_p = 7;
    c.submit("z", {1, 2, 3}, bad);
    QCOMPARE(finished.count(), 3);
    QVERIFY(statsOf(finished, "z").error.contains("top_p"));
    QCOMPARE(c.activeRequests(), 0);
  }

  void unloadCancelsRunningRequests() {
    EngineController c;
    loadTiny(c, 4096);
    QSignalSpy finished(&c, &EngineController::finished);
    QSignalSpy unloaded(&c, &EngineController::modelUnloaded);
    QSignalSpy tokens(&c, &EngineController::tokensArrived);
    c.submit("u", promptIds(c, "Hi"), greedy(4000));
    QVERIFY(tokens.wait(30000));
    c.unload();
    QCOMPARE(unloaded.count(), 1);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(statsOf(finished, "u").finish_reason, QString("cancelled"));
    QVERIFY(!c.isLoaded());
    QVERIFY(!c.promptRenderer());
  }

  void statsArriveWhileLoaded() {
    EngineController c;
    loadTiny(c);
    QSignalSpy stats(&c, &EngineController::statsUpdated);
    c.submit("s", promptIds(c, "Hello"), greedy(100));
    QVERIFY(stats.wait(5000));
    QTRY_VERIFY_WITH_TIMEOUT(stats.count() >= 3, 5000);
    const auto s = stats.last().at(0).value<EngineStats>();
    QVERIFY(s.kv_blocks_total > 0);
    QVERIFY(s.process_rss_bytes > 0);
    QVERIFY(c.currentStats().kv_blocks_total == s.kv_blocks_total);
  }

  // The application's setup: the controller on its own thread, reached through queued calls.
  void worksOnItsOwnThread() {
    EngineThread t;
    EngineController* c = t.controller();
    QVERIFY(c->thread() != QThread::currentThread());
    test::ControllerRelay relay(c);
    QSignalSpy loaded(&relay, &test::ControllerRelay::modelLoaded);
    QSignalSpy tokens(&relay, &test::ControllerRelay::tokensArrived);
    QSignalSpy finished(&relay, &test::ControllerRelay::finished);
    QMetaObject::invokeMethod(c, [c] { c->loadModel(fixture("tiny-chat"), "cpu", 1024, 0); });
    QVERIFY(loaded.wait(30000));
    const auto ids = c->renderPrompt({{"user", "Hello"}}).ids;  // thread-safe
    QVERIFY(!ids.empty());
    QMetaObject::invokeMethod(c, [c, ids] { c->submit("t", ids, greedy(50)); });
    QVERIFY(finished.wait(30000));
    int n = 0, batches = 0, largest = 0;
    joinedText(tokens, "t", &n, &batches, &largest);
    QCOMPARE(n, 50);
    QCOMPARE(statsOf(finished, "t").tokens, 50);
  }

  // tiny-chat-padded: config vocab_size 512 over a 480-token tokenizer. The controller limits
  // sampling to the tokenizer's ids, so a long sampled reply decodes completely.
  void paddedVocabularyNeverGivesUndecodableTokens() {
    EngineController c;
    QSignalSpy loaded(&c, &EngineController::modelLoaded);
    c.loadModel(fixture("tiny-chat-padded"), "cpu", 1024, 0);
    QCOMPARE(loaded.count(), 1);
    const auto summary = loaded.first().at(0).value<ModelSummary>();
    QCOMPARE(summary.vocab_size, 512);
    QCOMPARE(summary.sample_vocab, 480);
    QSignalSpy finished(&c, &EngineController::finished);
    QSignalSpy errors(&c, &EngineController::errorOccurred);
    SamplingParams p = greedy(300);
    p.temperature = 1.0f;
    p.seed = 11;
    c.submit("p", promptIds(c, "Hello"), p);
    QVERIFY(finished.wait(30000));
    const GenerationStats st = statsOf(finished, "p");
    QCOMPARE(st.finish_reason, QString("length"));
    QCOMPARE(st.tokens, 300);
    QCOMPARE(errors.count(), 0);
  }

  // A tokenizer with a hole in its ids (an added token at 500 of 512, nothing at 480..499): ids
  // below its largest are sampled, a hole cannot be decoded, and the reply ends as an error that
  // says so instead of "stop".
  void anUndecodableTokenEndsTheReplyAsAnError() {
    QTemporaryDir dir;
    const QString src = fixture("tiny-chat-padded");
    for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer_config.json"})
      QVERIFY(QFile::copy(src + "/" + f, dir.path() + "/" + f));
    QFile in(src + "/tokenizer.json");
    QVERIFY(in.open(QIODevice::ReadOnly));
    QJsonObject tok = QJsonDocument::fromJson(in.readAll()).object();
    QJsonArray added = tok.value("added_tokens").toArray();
    added.append(QJsonObject{{"id", 500},
                             {"content", "<|hole|>"},
                             {"single_word", false},
                             {"lstrip", false},
                             {"rstrip", false},
                             {"normalized", false},
                             {"special", true}});
    tok.insert("added_tokens", added);
    QFile out(dir.path() + "/tokenizer.json");
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(QJsonDocument(tok).toJson());
    out.close();
    EngineController c;
    QSignalSpy loaded(&c, &EngineController::modelLoaded);
    c.loadModel(dir.path(), "cpu", 1024, 0);
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(loaded.first().at(0).value<ModelSummary>().sample_vocab, 501);
    QSignalSpy finished(&c, &EngineController::finished);
    SamplingParams p = greedy(400);
    p.temperature = 1.0f;
    p.seed = 11;
    c.submit("h", promptIds(c, "Hello"), p);
    QVERIFY(finished.wait(30000));
    const GenerationStats st = statsOf(finished, "h");
    QCOMPARE(st.finish_reason, QString("error"));
    QVERIFY2(st.error.contains("could not decode generated token"), qPrintable(st.error));
    QVERIFY(st.tokens < 400);  // stopped at the undecodable token, not run to the end
  }

  // Per-reply rates come from the reply's own first and last token times.
  void replyRatesUseTheReplysOwnTimes() {
    QCOMPARE(replyDecodeRate(64, 0.1, 1.1), 63.0);
    QCOMPARE(replyDecodeRate(1, 0.1, 1.1), 0.0);   // one token: no decode interval
    QCOMPARE(replyDecodeRate(10, 0.5, 0.5), 0.0);  // no time passed
    QCOMPARE(replyDecodeRate(10, -1, 2.0), 0.0);   // no first token time
    QVERIFY(formatReplyStats(R"({"tokens":64,"tokens_per_s":14470,"ttft_s":0.0004})").contains("first token 0.4 ms"));
    QVERIFY(formatReplyStats(R"({"tokens":64,"tokens_per_s":14470.2,"ttft_s":0.25})").contains("14470 tok/s"));
    QVERIFY(formatReplyStats(R"({"ttft_s":0.00001})").contains("<0.1 ms"));
  }
};

QTEST_MAIN(TestEngineController)
#include "test_engine_controller.moc"
