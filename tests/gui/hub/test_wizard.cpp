// The download wizard walked end to end against the local Hub (a real HTTP server on 127.0.0.1,
// tests/support/local_hub) with a temporary HF cache: search (downloads, likes, gated, supported
// architecture), the model page (license, architecture, README summary, variants), the fit check,
// the download with per-file progress, pause, cancel and resume from the bytes on disk (a Range
// request), the quantize step's FP8-on-load choice, the model in the model list; a gated model's
// error with its link and the token that opens it; a download that goes on when the wizard closes.
#include <QCheckBox>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QTableWidget>
#include <QTreeView>
#include <QTreeWidget>
#include <QtTest>

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "core/store/store.h"
#include "gui/hub/load_preference.h"
#include "gui/hub/token_dialog.h"
#include "gui/hub/wizard/download_page.h"
#include "gui/hub/wizard/finish_page.h"
#include "gui/hub/wizard/fit_page.h"
#include "gui/hub/wizard/model_page.h"
#include "gui/hub/wizard/quantize_page.h"
#include "gui/hub/wizard/search_page.h"
#include "tests/gui/hub/hub_test_support.h"

using namespace inferdesk;
using namespace inferdesk::gui;
namespace gt = inferdesk::gui::test;
namespace lh = inferdesk::test;

namespace {

constexpr const char* kBlob = "extra/blob.safetensors";  // 4 MiB: long enough to watch it move

// Types `text` into the search box and waits for the results.
QTreeWidget* search(DownloadWizard& w, const QString& text) {
  SearchPage* page = w.searchPage();
  page->queryEdit()->setText(text);
  page->search();
  const bool done = QTest::qWaitFor([&] { return !page->statusLabel()->text().startsWith("Searching"); }, 20000);
  return done ? page->results() : nullptr;
}

QTreeWidgetItem* row_of(QTreeWidget* results, const QString& id) {
  for (int i = 0; i < results->topLevelItemCount(); ++i)
    if (results->topLevelItem(i)->text(SearchPage::Model) == id) return results->topLevelItem(i);
  return nullptr;
}

// Selects `id` in the results and goes to the model page, waiting until it has read the repository.
bool open_model(DownloadWizard& w, const QString& id) {
  QTreeWidgetItem* item = row_of(w.searchPage()->results(), id);
  if (!item) return false;
  w.searchPage()->results()->setCurrentItem(item);
  w.next();
  return w.currentId() == DownloadWizard::Model && QTest::qWaitFor([&] { return !w.modelPage()->loading(); }, 20000);
}

const hub::FileProgress* file(const DownloadEntry* e, const std::string& path) {
  if (!e) return nullptr;
  for (const auto& f : e->files)
    if (f.path == path) return &f;
  return nullptr;
}

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

class TestWizard : public QObject {
  Q_OBJECT

 private slots:
  void searchShowsDownloadsLikesGatedAndSupport();
  void walksFromSearchToTheModelList();
  void aGatedModelAsksForATokenAndOpensWithIt();
  void theDownloadGoesOnWhenTheWizardCloses();

 private:
  // The steps of walksFromSearchToTheModelList; each QVERIFY failure returns from the step.
  void checkModelPage(DownloadWizard& w);
  void checkFitAndPickFp8(DownloadWizard& w);
  void watchProgressPauseAndCancel(gt::HubFixture& f, DownloadWizard& w, int* id);
  void retryToTheModelList(gt::HubFixture& f, DownloadWizard& w, int id, qint64* model_id);
};

void TestWizard::searchShowsDownloadsLikesGatedAndSupport() {
  gt::HubFixture f;
  DownloadWizard w(f.services());
  w.show();
  QTreeWidget* results = search(w, "inferdesk");
  QVERIFY(results);
  QCOMPARE(results->topLevelItemCount(), 3);
  QCOMPARE(results->topLevelItem(0)->text(SearchPage::Model), QString(lh::kTinyRepo));  // most downloaded first
  QTreeWidgetItem* tiny = row_of(results, lh::kTinyRepo);
  QCOMPARE(tiny->text(SearchPage::Downloads), QLocale().toString(1234));
  QCOMPARE(tiny->text(SearchPage::Likes), QLocale().toString(56));
  QCOMPARE(tiny->text(SearchPage::Gated), QString("no"));
  QCOMPARE(tiny->text(SearchPage::Architecture), QString("qwen2 (supported)"));
  QCOMPARE(row_of(results, lh::kGatedRepo)->text(SearchPage::Gated), QString("yes (manual)"));
  QCOMPARE(row_of(results, lh::kPickleRepo)->text(SearchPage::Architecture), QString("gpt2 (not supported)"));
  QVERIFY(w.currentPage()->isComplete());  // the first row is selected
  // The search went to the endpoint of the HubEnvironment, for text-generation models.
  const auto requests = f.hub.requests_for("/api/models");
  QVERIFY(!requests.empty());
  QVERIFY(requests.back()["query"].get<std::string>().find("search=inferdesk") != std::string::npos);
  QVERIFY(search(w, "no-such-model-anywhere"));
  QCOMPARE(w.searchPage()->results()->topLevelItemCount(), 0);
  QVERIFY(w.searchPage()->statusLabel()->text().contains("No text-generation model"));
  QVERIFY(!w.currentPage()->isComplete());
}

void TestWizard::walksFromSearchToTheModelList() {
  gt::HubFixture f;
  // A slow file: the progress can be watched, paused and cancelled half-way.
  f.hub.fault({{"path", kBlob}, {"kind", "trickle"}, {"rate", 1 << 20}, {"count", -1}});
  DownloadWizard w(f.services());
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QVERIFY(search(w, "tiny"));
  QVERIFY(open_model(w, lh::kTinyRepo));

  checkModelPage(w);
  if (QTest::currentTestFailed()) return;
  checkFitAndPickFp8(w);
  if (QTest::currentTestFailed()) return;
  int id = 0;
  watchProgressPauseAndCancel(f, w, &id);
  if (QTest::currentTestFailed()) return;
  qint64 model_id = 0;
  retryToTheModelList(f, w, id, &model_id);
  if (QTest::currentTestFailed()) return;
  // Quantize: only the FP8-on-load preset exists, and it was the chosen variant.
  w.next();
  QCOMPARE(w.currentId(), int(DownloadWizard::Quantize));
  QVERIFY(!w.quantizePage()->fp8Button()->isHidden());
  QVERIFY(w.quantizePage()->fp8Button()->isChecked());
  // The download finished: FP8's accuracy can be measured (the parts test measures it).
  QVERIFY(!w.quantizePage()->measureButton()->isHidden());
  QCOMPARE(w.state().model_dir, f.panel.manager()->entry(id)->snapshot_dir);
  w.next();
  QCOMPARE(load_quantization(*f.stores.settings, model_id), LoadQuantization::Fp8);

  // Finish: the model is ready; Finish shows it on the Models page.
  QCOMPARE(w.currentId(), int(DownloadWizard::Finish));
  QVERIFY(w.finishPage()->summaryLabel()->text().contains("ready to load"));
  QVERIFY(w.finishPage()->summaryLabel()->text().contains("FP8"));
  gt::saveScreenshot(&w, "hub_wizard_finish");
  w.button(QWizard::FinishButton)->click();
  QCOMPARE(f.shown_model, model_id);
}

void TestWizard::checkModelPage(DownloadWizard& w) {
  // The model page: what the repository is, before any download.
  ModelPage* model = w.modelPage();
  const QString facts = model->factsLabel()->text();
  QVERIFY2(facts.contains("apache-2.0"), qPrintable(facts));
  QVERIFY(facts.contains("Qwen2ForCausalLM"));
  QVERIFY(facts.contains("qwen2 is supported"));
  QVERIFY(facts.contains("BF16"));
  QVERIFY(facts.contains("FP8 on load"));
  QVERIFY(facts.contains("pytorch_model.bin"));  // listed as not downloaded (pickle)
  QCOMPARE(model->summaryLabel()->text(), QString("A tiny random-weight test model."));
  QVERIFY(model->isComplete());
  gt::saveScreenshot(&w, "hub_wizard_model");
}

void TestWizard::checkFitAndPickFp8(DownloadWizard& w) {
  // The fit check: no GPU here, 8 GiB of RAM: the tiny model fits in RAM only.
  w.next();
  QCOMPARE(w.currentId(), int(DownloadWizard::Fit));
  FitPage* fit = w.fitPage();
  QCOMPARE(fit->table()->rowCount(), 2);     // BF16, FP8 on load
  QCOMPARE(fit->table()->columnCount(), 3);  // variant, download size, the model's 4K context
  QCOMPARE(fit->table()->item(0, 2)->text(), QString("fits in RAM only"));
  QVERIFY(fit->machineLabel()->text().contains("no GPU in this test"));
  QVERIFY(fit->selectVariant(1));  // FP8 on load
  gt::saveScreenshot(&w, "hub_wizard_fit");
}

void TestWizard::watchProgressPauseAndCancel(gt::HubFixture& f, DownloadWizard& w, int* download_id) {
  // The download: per-file progress while the slow file moves.
  w.next();
  QCOMPARE(w.currentId(), int(DownloadWizard::Download));
  DownloadPage* page = w.downloadPage();
  DownloadManager* m = f.panel.manager();
  const int id = *download_id = page->downloadId();
  QVERIFY(id > 0);
  QVERIFY(QTest::qWaitFor(
      [&] {
        const auto* b = file(m->entry(id), kBlob);
        return b && b->state == hub::FileState::Downloading && b->bytes_done > 0;
      },
      20000));
  QVERIFY(QTest::qWaitFor([&] { return m->entry(id)->speed() > 0; }, 5000));
  QVERIFY(page->statusLabel()->text().contains("/s"));
  QVERIFY(page->filesView()->model()->rowCount(page->filesView()->rootIndex()) >= 8);  // one row per file
  QVERIFY(!w.currentPage()->isComplete());
  gt::saveScreenshot(&w, "hub_wizard_download");

  // Pause: the bytes stop; cancel: unfinished files read cancelled, their bytes stay on disk.
  page->pauseButton()->click();
  QCOMPARE(m->entry(id)->status, DownloadStatus::Paused);
  QVERIFY(QTest::qWaitFor([&] { return file(m->entry(id), kBlob)->state == hub::FileState::Paused; }, 10000));
  const qint64 paused_at = file(m->entry(id), kBlob)->bytes_done;
  QTest::qWait(600);
  QCOMPARE(file(m->entry(id), kBlob)->bytes_done, paused_at);
  page->resumeButton()->click();
  QVERIFY(QTest::qWaitFor([&] { return file(m->entry(id), kBlob)->bytes_done > paused_at; }, 10000));
  page->cancelButton()->click();
  QVERIFY(QTest::qWaitFor(
      [&] {
        return m->entry(id)->status == DownloadStatus::Cancelled &&
               file(m->entry(id), kBlob)->state == hub::FileState::Cancelled;
      },
      10000));
  const qint64 kept = file(m->entry(id), kBlob)->bytes_done;
  QVERIFY(kept > 0 && kept < 4 << 20);
  bool partial = false;  // the bytes kept for the resume
  for (const auto& p :
       std::filesystem::directory_iterator(f.cache_dir() / "models--inferdesk-test--tiny-chat" / "blobs"))
    partial = partial || p.path().extension() == ".incomplete";
  QVERIFY(partial);
  QVERIFY(page->resumeButton()->isEnabled());
  QVERIFY(!w.currentPage()->isComplete());
}

void TestWizard::retryToTheModelList(gt::HubFixture& f, DownloadWizard& w, int id, qint64* model_id) {
  DownloadPage* page = w.downloadPage();
  DownloadManager* m = f.panel.manager();
  // Retry: planned again, resumed with a Range from the bytes kept, verified, in the model list.
  f.hub.reset();
  page->resumeButton()->click();
  QVERIFY(QTest::qWaitFor([&] { return w.currentPage()->isComplete(); }, 30000));
  bool ranged = false;
  for (const auto& r : f.hub.requests())
    if (r["method"] == "GET" && r.contains("from") && r["from"].get<qint64>() > 0) ranged = true;
  QVERIFY2(ranged, "the resumed download did not ask for the rest with a Range");
  const DownloadEntry* e = m->entry(id);
  QCOMPARE(e->status, DownloadStatus::Done);
  QCOMPARE(file(e, kBlob)->state, hub::FileState::Done);
  const std::filesystem::path blob = std::filesystem::path(e->snapshot_dir.toStdString()) / kBlob;
  QCOMPARE(lh::sha256sum(blob).substr(0, 64), f.hub.tree(lh::kTinyRepo)[kBlob]["lfs"]["oid"].get<std::string>());
  QVERIFY(!std::filesystem::exists(e->snapshot_dir.toStdString() + "/pytorch_model.bin"));
  QVERIFY(page->statusLabel()->text().contains("added to your model list"));
  const ModelRow* row = f.models.table()->find(e->model_id);
  QVERIFY(row);
  QVERIFY(row->path.endsWith(QFileInfo(e->snapshot_dir).fileName()));  // the snapshot's commit folder
  QVERIFY(row->path.contains("models--inferdesk-test--tiny-chat/snapshots/"));
  QVERIFY(f.stores.models->find_by_path(row->path.toStdString()).has_value());

  *model_id = e->model_id;
}

void TestWizard::aGatedModelAsksForATokenAndOpensWithIt() {
  gt::HubFixture f;
  DownloadWizard w(f.services());
  w.show();
  QVERIFY(search(w, "gated"));
  QVERIFY(open_model(w, lh::kGatedRepo));
  ModelPage* model = w.modelPage();
  const QString problem = model->problemLabel()->text();
  QVERIFY2(problem.contains("gated"), qPrintable(problem));
  QVERIFY(problem.contains(QString::fromStdString(f.hub.url()) + "/" + lh::kGatedRepo));  // where to ask
  QVERIFY(problem.contains("token"));
  QVERIFY(!model->tokenButton()->isHidden());
  QVERIFY(!model->isComplete());
  gt::saveScreenshot(&w, "hub_wizard_gated");

  model->tokenButton()->click();
  TokenDialog* dialog = nullptr;
  QVERIFY(QTest::qWaitFor([&] { return (dialog = w.findChild<TokenDialog*>()) != nullptr; }, 5000));
  QCOMPARE(dialog->tokenEdit()->echoMode(), QLineEdit::Password);
  QVERIFY(!dialog->saveButton()->isEnabled());
  dialog->tokenEdit()->setText(lh::kGrantedToken);
  dialog->saveButton()->click();
  // Saved, sent, and the page read the repository again with it.
  QVERIFY(QTest::qWaitFor([&] { return model->isComplete(); }, 20000));
  QCOMPARE(f.service.tokenSource(), QString("InferDesk"));
  QVERIFY(model->problemLabel()->text().isEmpty());
  // The token is in the 0600 file, never in the database.
  struct stat st {};
  QCOMPARE(stat(f.token_file().c_str(), &st), 0);
  QCOMPARE(st.st_mode & 0777, 0600u);
  QVERIFY(file_text(f.token_file()).find(lh::kGrantedToken) != std::string::npos);
  f.stores.db.reset();  // flush and close: the bytes on disk are what would stay
  QVERIFY(file_text(QString(f.stores.dir.path() + "/inferdesk.db").toStdString()).find(lh::kGrantedToken) ==
          std::string::npos);
}

void TestWizard::theDownloadGoesOnWhenTheWizardCloses() {
  gt::HubFixture f;
  f.hub.fault({{"path", kBlob}, {"kind", "trickle"}, {"rate", 2 << 20}, {"count", -1}});
  int id = 0;
  {
    DownloadWizard w(f.services());
    w.show();
    QVERIFY(search(w, "tiny"));
    QVERIFY(open_model(w, lh::kTinyRepo));
    w.next();
    w.next();
    QCOMPARE(w.currentId(), int(DownloadWizard::Download));
    id = w.downloadPage()->downloadId();
    QVERIFY(QTest::qWaitFor([&] { return f.panel.manager()->entry(id)->status == DownloadStatus::Running; }, 20000));
    w.reject();
  }  // the wizard is gone; the panel still has the download
  QCOMPARE(f.panel.selectedId(), id);
  QVERIFY(QTest::qWaitFor([&] { return f.panel.manager()->entry(id)->status == DownloadStatus::Done; }, 30000));
  const DownloadEntry* e = f.panel.manager()->entry(id);
  QVERIFY(e->model_id > 0);
  QVERIFY(f.models.table()->find(e->model_id));
  QVERIFY(f.panel.showModelButton()->isEnabled());
  QVERIFY(f.panel.removeButton()->isEnabled());
  QCOMPARE(f.panel.model()->data(f.panel.model()->indexOf(id, DownloadsModel::State), Qt::DisplayRole).toString(),
           QString("done"));
}

QTEST_MAIN(TestWizard)
#include "test_wizard.moc"
