// gui/hub's parts on their own: the README summary, the variants a repository holds (BF16, FP8,
// AWQ, GPTQ folders) and which the wizard downloads, the fit check's verdicts and its agreement
// with the model manager's estimate, the token vault (secret service, else the 0600 file), the
// Hub service's token order, the downloads model and panel (a gated failure with its link, then
// the token that lets it finish), and the main window's commands.
#include <QAbstractItemModelTester>
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalSpy>
#include <QTreeWidget>
#include <QtTest>

#include <sys/stat.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/engine/model_info.h"
#include "gui/hub/fit_check.h"
#include "gui/hub/hub_feature.h"
#include "gui/hub/load_preference.h"
#include "gui/hub/repo_overview.h"
#include "gui/hub/wizard/download_wizard.h"
#include "gui/hub/wizard/quant_report.h"
#include "gui/hub/wizard/quantize_page.h"
#include "gui/hub/wizard/search_page.h"
#include "gui/models/models_page.h"
#include "tests/gui/hub/hub_test_support.h"

using namespace inferdesk;
using namespace inferdesk::gui;
namespace gt = inferdesk::gui::test;
namespace lh = inferdesk::test;

namespace {

std::string read_text(const QString& path) {
  std::ifstream in(path.toStdString());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string tiny_config() { return read_text(gt::fixture("tiny-chat") + "/config.json"); }

std::string with_quant(const nlohmann::json& qc) {
  auto j = nlohmann::json::parse(tiny_config());
  j["quantization_config"] = qc;
  return j.dump();
}

hub::RepoFile repo_file(const std::string& path, int64_t size) {
  hub::RepoFile f;
  f.path = path;
  f.size = size;
  f.oid = std::string(40, 'a');
  return f;
}

RepoOverview overview(const std::string& id, std::vector<hub::RepoFile> files,
                      const std::optional<std::string>& config) {
  RepoOverview o;
  o.repo_id = id;
  o.files = std::move(files);
  describe_repo(o, "", config);
  return o;
}

// A secret service that answers (or not) at once, keeping what it was given.
struct FakeSecret : SecretBackend {
  bool available = true;
  QString stored;
  int writes = 0;
  void read(Done done) override { available ? done(true, stored) : done(false, "no secret service here"); }
  void write(const QString& token, Done done) override {
    if (!available) return done(false, "no secret service here");
    stored = token;
    ++writes;
    done(true, {});
  }
  void remove(Done done) override {
    stored.clear();
    done(available, available ? QString() : QString("no secret service here"));
  }
  QString describe() const override { return "the fake keyring"; }
};

// A repository of unquantized (BF16) weights: the root variant and FP8 on load.
RepoOverview quantizable_overview() {
  return overview("org/tiny", {repo_file("model.safetensors", 1000), repo_file("config.json", 10)}, tiny_config());
}

}  // namespace

class TestHubParts : public QObject {
  Q_OBJECT

 private slots:
  void readmeSummarySkipsFrontMatterHeadingsAndBadges() {
    QCOMPARE(readme_summary("---\nlicense: mit\ntags: [a]\n---\n# Title\n[![b](x)](y)\n\nThe **first** real "
                            "paragraph, with a [link](http://x).\nIt goes on.\n\nSecond."),
             QString("The first real paragraph, with a link. It goes on."));
    QCOMPARE(readme_summary("# Only a heading\n\n| a | b |\n|---|---|\n"), QString());
    const QString cut = readme_summary(std::string(200, 'w') + " " + std::string(2000, 'x'), 300);
    QVERIFY(cut.size() <= 301);
    QVERIFY(cut.endsWith(QChar(0x2026)));
  }

  // The quantize step's accuracy report, on the page alone fed a finished download (the tiny-chat
  // folder) and measured on the CPU: the progress bar advances, the report shows finite
  // perplexities, a KL divergence above zero, the sizes and that tok/s needs a GPU.
  void theQuantizeStepMeasuresFp8Accuracy() {
    gt::HubFixture f;
    WizardServices services = f.services();
    WizardState state;
    state.overview = quantizable_overview();
    state.variant = 1;  // FP8 on load
    state.model_dir = gt::fixture("tiny-chat");
    QuantizePage page(services, state);
    page.setMeasureBackend("cpu");
    page.initializePage();
    page.show();
    QVERIFY(page.fp8Button()->isChecked());
    QVERIFY(!page.measureButton()->isHidden());
    page.asPublishedButton()->setChecked(true);
    QVERIFY(page.measureButton()->isHidden());  // only for FP8
    page.fp8Button()->setChecked(true);
    QVERIFY(!page.measureButton()->isHidden());

    QList<int> values;
    connect(page.measureProgress(), &QProgressBar::valueChanged, this, [&](int v) { values << v; });
    QSignalSpy done(page.runner(), &QuantReportRunner::finished);
    page.measureButton()->click();
    QVERIFY(page.runner()->running());
    QVERIFY(!page.measureButton()->isEnabled());
    QVERIFY(!page.cancelMeasureButton()->isHidden());
    QVERIFY(done.wait(120000));
    QVERIFY2(values.size() >= 3, qPrintable(QString::number(values.size())));
    for (int i = 1; i < values.size(); ++i) QVERIFY(values[i] >= values[i - 1]);
    QCOMPARE(page.measureProgress()->value(), page.measureProgress()->maximum());
    const QuantEvalReport& r = page.runner()->report();
    QVERIFY(r.tokens > 100);
    QVERIFY(std::isfinite(r.perplexity_base) && r.perplexity_base > 1);
    QVERIFY(std::isfinite(r.perplexity_quant) && r.perplexity_quant > 1);
    QVERIFY(r.kl_mean > 0);
    QVERIFY(r.kl_max >= r.kl_mean);
    QVERIFY(r.weight_bytes_quant < r.weight_bytes_base);
    const QString text = page.reportLabel()->text();
    QVERIFY2(text.contains("Perplexity:") && text.contains("→"), qPrintable(text));
    QVERIFY(text.contains("KL divergence: mean"));
    QVERIFY(text.contains("Top-1 agreement"));
    QVERIFY(text.contains("Weight size:"));
    QVERIFY(text.contains("tok/s: measured on a GPU only"));
    QVERIFY(text.contains("CPU"));
    QVERIFY(!page.reportLabel()->isHidden());
    QVERIFY(page.cancelMeasureButton()->isHidden());
    QVERIFY(page.measureButton()->isEnabled());
    page.resize(760, 360);
    gt::saveScreenshot(&page, "hub_wizard_quant_report");
  }

  // Cancel half-way: no report, no crash, and the page can measure again; an error shows its
  // message; closing the wizard cancels a measurement.
  void theAccuracyMeasurementCancelsAndReportsErrors() {
    gt::HubFixture f;
    WizardServices services = f.services();
    WizardState state;
    state.overview = quantizable_overview();
    state.variant = 1;
    state.model_dir = gt::fixture("tiny-chat");
    QuantizePage page(services, state);
    page.setMeasureBackend("cpu");
    page.initializePage();
    page.show();
    QSignalSpy cancelled(page.runner(), &QuantReportRunner::cancelled);
    QSignalSpy finished(page.runner(), &QuantReportRunner::finished);
    bool once = false;
    connect(page.runner(), &QuantReportRunner::progress, this, [&](double) {
      if (once) return;
      once = true;
      page.cancelMeasureButton()->click();
    });
    page.measureButton()->click();
    QVERIFY(cancelled.wait(120000));
    QVERIFY(once);
    QCOMPARE(finished.count(), 0);
    QVERIFY(!page.runner()->running());
    QCOMPARE(page.runner()->report().tokens, 0);
    QVERIFY(!page.reportLabel()->text().contains("Perplexity"));
    QVERIFY(page.reportLabel()->text().contains("cancelled"));
    QVERIFY(page.measureButton()->isEnabled());
    QVERIFY(page.cancelMeasureButton()->isHidden());

    // An error (a folder that is no model) shows its message.
    QTemporaryDir empty;
    state.model_dir = empty.path();
    QSignalSpy failed(page.runner(), &QuantReportRunner::failed);
    page.measureButton()->click();
    QVERIFY(failed.wait(60000));
    QVERIFY2(page.reportLabel()->text().startsWith("Could not measure the accuracy: "),
             qPrintable(page.reportLabel()->text()));
    QVERIFY(page.reportLabel()->text().size() > QString("Could not measure the accuracy: ").size());

    // Closing the wizard cancels the measurement; the wizard object stays fine.
    DownloadWizard w(f.services());
    w.state().overview = quantizable_overview();
    w.state().variant = 1;
    w.state().model_dir = gt::fixture("tiny-chat");
    w.quantizePage()->setMeasureBackend("cpu");
    w.quantizePage()->initializePage();
    w.show();
    QSignalSpy wcancelled(w.quantizePage()->runner(), &QuantReportRunner::cancelled);
    w.quantizePage()->measure();
    QVERIFY(w.quantizePage()->runner()->running());
    w.reject();
    QVERIFY(wcancelled.wait(120000));
    QVERIFY(!w.quantizePage()->runner()->running());
  }

  void formatsComeFromNames() {
    QCOMPARE(format_from_name("Qwen/Qwen3-8B-AWQ"), std::optional(VariantFormat::Awq));
    QCOMPARE(format_from_name("gptq-int4/"), std::optional(VariantFormat::Gptq));
    QCOMPARE(format_from_name("Qwen3-8B-FP8"), std::optional(VariantFormat::Fp8));
    QCOMPARE(format_from_name("org/model-w4a16"), std::optional(VariantFormat::OtherQuant));
    QCOMPARE(format_from_name("org/model-bf16"), std::optional(VariantFormat::Unquantized));
    QVERIFY(!format_from_name("org/awqward-model").has_value());  // a word, not a tag
  }

  void anUnquantizedRepositoryOffersFp8OnLoad() {
    const auto o = overview("org/tiny", {repo_file("model.safetensors", 1000), repo_file("config.json", 10)},
                            tiny_config());
    QVERIFY(o.config.has_value());
    QVERIFY(o.architecture_supported);
    QCOMPARE(o.variants.size(), size_t(2));
    QCOMPARE(o.variants[0].label, QString("BF16"));  // config.json's torch_dtype (no Hub dtype counts here)
    QVERIFY(o.variants[0].runnable && o.variants[0].downloadable && !o.variants[0].quantize_on_load);
    QVERIFY(o.variants[1].quantize_on_load && o.variants[1].runnable);
    QVERIFY(o.variants[1].label.startsWith("FP8 on load"));
    QVERIFY(o.root_filter.include.empty());  // everything the allow-list admits
    QCOMPARE(o.download_bytes, 1010);
  }

  void quantizedRepositoriesSayWhatTheyAre() {
    const auto awq = overview("org/m-AWQ", {repo_file("model.safetensors", 100)},
                              with_quant({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}}));
    QCOMPARE(awq.variants.size(), size_t(1));  // no FP8 on load over AWQ weights
    QCOMPARE(awq.variants[0].label, QString("AWQ INT4"));
    QVERIFY(!awq.variants[0].runnable && !awq.variants[0].downloadable);
    QVERIFY(awq.variants[0].note.contains("AWQ"));
    const auto gptq = overview("org/m", {repo_file("model.safetensors", 100)},
                               with_quant({{"quant_method", "gptq"}, {"bits", 8}}));
    QCOMPARE(gptq.variants[0].label, QString("GPTQ INT8"));
    const QString fp8_dir = QString(INFERDESK_SOURCE_DIR) + "/tests/golden/models-fp8/llama-channel";
    const auto fp8 = overview("org/m", {repo_file("model.safetensors", 100)}, read_text(fp8_dir + "/config.json"));
    QCOMPARE(fp8.variants.size(), size_t(1));
    QVERIFY2(fp8.variants[0].label.startsWith("FP8 (compressed-tensors"), qPrintable(fp8.variants[0].label));
    QVERIFY(fp8.variants[0].runnable && fp8.variants[0].format == VariantFormat::Fp8);
  }

  void weightFoldersAreVariantsTheWizardDoesNotMix() {
    const auto o = overview("org/m",
                            {repo_file("config.json", 10), repo_file("model.safetensors", 1000),
                             repo_file("gptq-int4/model.safetensors", 300), repo_file("gptq-int4/config.json", 5),
                             repo_file("extra/blob.safetensors", 50), repo_file("odd[1].json", 1),
                             repo_file("pytorch_model.bin", 99)},
                            tiny_config());
    QCOMPARE(o.variants.size(), size_t(3));
    QCOMPARE(o.variants[0].file_bytes, 1050);  // extra/ has no format or config of its own: the root's
    const RepoVariant& gptq = o.variants[2];
    QCOMPARE(gptq.folder, QString("gptq-int4/"));
    QCOMPARE(gptq.format, VariantFormat::Gptq);
    QVERIFY(!gptq.downloadable);
    QVERIFY(gptq.note.contains("--include 'gptq-int4/*'"));
    // The root's download names its files, so the GPTQ folder stays out.
    hub::FileFilter filter = o.root_filter;
    QVERIFY(hub::is_selected(filter, "model.safetensors"));
    QVERIFY(hub::is_selected(filter, "extra/blob.safetensors"));
    QVERIFY(hub::is_selected(filter, "odd[1].json"));
    QVERIFY(!hub::is_selected(filter, "odd1.json"));
    QVERIFY(!hub::is_selected(filter, "gptq-int4/model.safetensors"));
    QCOMPARE(o.skipped.size(), 1);
    QVERIFY(o.skipped[0].startsWith("pytorch_model.bin"));
  }

  void unsupportedAndLockedRepositoriesSayWhy() {
    const auto gpt2 = overview("org/gpt2", {repo_file("model.safetensors", 10)},
                               std::string(R"({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})"));
    QVERIFY(!gpt2.architecture_supported);
    QVERIFY(gpt2.support_note.contains("gpt2 is not supported"));
    QVERIFY(gpt2.support_note.contains("qwen2"));  // what InferDesk runs instead
    QVERIFY(!gpt2.variants[0].runnable);
    RepoOverview gated;
    gated.repo_id = "org/gated";
    gated.files = {repo_file("model.safetensors", 10)};
    gated.access_error = hub::HubError(hub::HubErrorKind::Gated, "this model is gated: request access at X", 401);
    describe_repo(gated, "", std::nullopt);
    QVERIFY(gated.config_problem.contains("grants your token access"));
    QVERIFY(!gated.variants[0].runnable);
  }

  void fitContextsAreTheModelsAndTheCommonOnes() {
    QCOMPARE(fit_contexts(4096), (std::vector<qint64>{4096}));
    QCOMPARE(fit_contexts(40960), (std::vector<qint64>{4096, 32768, 40960}));
    QCOMPARE(fit_contexts(131072), (std::vector<qint64>{4096, 32768, 131072}));
    QCOMPARE(fit_contexts(1 << 20), (std::vector<qint64>{4096, 32768, 131072, 1 << 20}));
  }

  void theFitCheckAgreesWithTheModelManager() {
    // The Hub's view of tiny-chat (its parameters and weight bytes) and the folder on disk give the
    // model manager's own numbers, on both backends.
    const ModelInfo local = inspect_model_folder(gt::fixture("tiny-chat").toStdString());
    RepoVariant v;
    v.runnable = true;
    v.file_bytes = local.weight_bytes;
    MachineMemory machine;
    const FitCell cell = check_fit(local.config, local.params_total, v, 4096, machine);
    QCOMPARE(cell.ram_bytes, ModelManager::checkMemory(local, "cpu", 4096, 0).required);
    QCOMPARE(cell.gpu_bytes, ModelManager::checkMemory(local, "cuda", 4096, 0).required);
    // Verdicts at the edges of each budget.
    machine.ram_available = cell.ram_bytes;
    QCOMPARE(check_fit(local.config, local.params_total, v, 4096, machine).fit, Fit::RamOnly);
    machine.ram_available = cell.ram_bytes - 1;
    QCOMPARE(check_fit(local.config, local.params_total, v, 4096, machine).fit, Fit::None);
    machine.gpu_usable = true;
    machine.gpu_free = cell.gpu_bytes;
    QCOMPARE(check_fit(local.config, local.params_total, v, 4096, machine).fit, Fit::Gpu);
    machine.gpu_free = cell.gpu_bytes - 1;
    QCOMPARE(check_fit(local.config, local.params_total, v, 4096, machine).fit, Fit::None);
    machine.ram_available = 0;  // unknown RAM and no GPU room: no verdict is better than a wrong one
    QCOMPARE(check_fit(local.config, local.params_total, v, 4096, machine).fit, Fit::Unknown);
    // A longer context costs KV cache.
    QVERIFY(check_fit(local.config, local.params_total, v, 4096, machine).ram_bytes >
            check_fit(local.config, local.params_total, v, 1024, machine).ram_bytes);
  }

  void fp8NeedsLessThanBf16AndBigModelsDoNotFit() {
    auto cfg = nlohmann::json::parse(tiny_config());
    cfg["hidden_size"] = 8192;
    cfg["intermediate_size"] = 28672;
    cfg["num_hidden_layers"] = 80;
    cfg["num_attention_heads"] = 64;
    cfg["num_key_value_heads"] = 8;
    cfg["vocab_size"] = 128256;
    cfg["max_position_embeddings"] = 131072;
    const ModelConfig big = ModelConfig::from_json(cfg);
    const qint64 params = 70'000'000'000;
    RepoVariant bf16;
    bf16.runnable = true;
    bf16.file_bytes = params * 2;
    RepoVariant fp8 = bf16;
    fp8.quantize_on_load = true;
    fp8.format = VariantFormat::Fp8;
    MachineMemory m;
    m.gpu_usable = true;
    m.gpu_free = qint64(80) << 30;
    m.ram_available = qint64(24) << 30;
    const FitCell a = check_fit(big, params, bf16, 4096, m);
    const FitCell b = check_fit(big, params, fp8, 4096, m);
    QCOMPARE(a.fit, Fit::None);  // 140 GB of BF16 weights: neither 80 GiB of GPU nor 24 GiB of RAM
    QCOMPARE(b.fit, Fit::Gpu);   // about 70 GB in FP8 fits the 80 GiB GPU
    QVERIFY(b.gpu_bytes < a.gpu_bytes * 6 / 10);
    QVERIFY(a.detail.contains("on the GPU"));
    const QString text = fit_text(Fit::RamOnly) + fit_text(Fit::Gpu) + fit_text(Fit::None);
    QCOMPARE(text, QString("fits in RAM onlyfits on your GPUdoes not fit"));
  }

  void theVaultUsesTheSecretServiceElseThe0600File() {
    QTemporaryDir dir;
    const std::filesystem::path file = dir.path().toStdString() + "/hf-token";
    auto* secret = new FakeSecret;
    TokenVault vault(std::unique_ptr<SecretBackend>(secret), make_file_backend(file));
    QSignalSpy changed(&vault, &TokenVault::tokenChanged);
    vault.save("hf_in_the_keyring");
    QCOMPARE(changed.count(), 1);
    QCOMPARE(secret->stored, QString("hf_in_the_keyring"));
    QVERIFY(!std::filesystem::exists(file));  // the keyring answered: no copy on disk
    QCOMPARE(vault.location(), QString("the fake keyring"));
    // The keyring goes away: the next save goes to the 0600 file and says why.
    secret->available = false;
    vault.save("hf_in_the_file");
    QCOMPARE(vault.token(), QString("hf_in_the_file"));
    QVERIFY(std::filesystem::exists(file));
    struct stat st {};
    QCOMPARE(stat(file.c_str(), &st), 0);
    QCOMPARE(st.st_mode & 0777, 0600u);
    QVERIFY(vault.secretServiceProblem().contains("no secret service"));
    QVERIFY(vault.location().contains("hf-token"));
    // A fresh vault without a keyring finds it in the file; clear removes it.
    TokenVault again(nullptr, make_file_backend(file));
    again.load();
    QCOMPARE(again.token(), QString("hf_in_the_file"));
    again.clear();
    QVERIFY(again.token().isEmpty());
    QVERIFY(!std::filesystem::exists(file));
    // A token file others can read is refused, with the reason.
    { std::ofstream(file) << "hf_exposed\n"; }
    std::filesystem::permissions(file, std::filesystem::perms::others_read, std::filesystem::perm_options::add);
    TokenVault exposed(nullptr, make_file_backend(file));
    QSignalSpy failed(&exposed, &TokenVault::failed);
    exposed.load();
    QCOMPARE(failed.count(), 1);
    QVERIFY(exposed.token().isEmpty());
  }

  void theAppsTokenComesFirst() {
    QTemporaryDir dir;
    hub::HubEnvironment env = gt::local_env("http://127.0.0.1:9", dir.path());
    env.hf_token = "hf_from_env";
    HubService service(env);
    QCOMPARE(service.tokenSource(), QString("HF_TOKEN"));
    QCOMPARE(service.client()->options().token, std::string("hf_from_env"));
    QSignalSpy changed(&service, &HubService::tokenChanged);
    service.setAppToken("hf_typed_in_the_app");
    QCOMPARE(changed.count(), 1);
    QCOMPARE(service.tokenSource(), QString("InferDesk"));
    QCOMPARE(service.client()->options().token, std::string("hf_typed_in_the_app"));
    QCOMPARE(service.endpoint(), QString("http://127.0.0.1:9"));
    QCOMPARE(service.cache().root(), std::filesystem::path(dir.path().toStdString() + "/hf/hub"));
  }

  void aGatedDownloadFailsWithItsLinkThenFinishesWithAToken() {
    gt::HubFixture f;
    QAbstractItemModelTester tester(f.panel.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    DownloadManager* m = f.panel.manager();
    const int id = m->start(lh::kGatedRepo, "main", {}, DownloadIntent{"BF16", true});
    QCOMPARE(f.panel.model()->rowCount(), 1);
    QVERIFY(QTest::qWaitFor([&] { return m->entry(id)->status == DownloadStatus::Failed; }, 20000));
    const DownloadEntry* e = m->entry(id);
    QVERIFY(e->failure && e->failure->kind == hub::HubErrorKind::Gated);
    QVERIFY(e->failure->needsToken());
    QCOMPARE(f.panel.selectedId(), id);
    QVERIFY(!f.panel.errorLabel()->isHidden());
    const QString error = f.panel.errorLabel()->text();
    QVERIFY2(error.contains("gated"), qPrintable(error));
    QVERIFY(error.contains("href=\"" + QString::fromStdString(f.hub.url()) + "/" + lh::kGatedRepo + "\""));
    QVERIFY(!f.panel.tokenButton()->isHidden());
    // Refused while planning (the Hub's HEAD of each file): nothing was written under the cache.
    QCOMPARE(f.panel.model()->rowCount(f.panel.model()->indexOf(id)), 0);
    QVERIFY(!std::filesystem::exists(f.cache_dir() / "models--inferdesk-test--gated-model" / "snapshots"));
    // A token: the failed download starts again by itself and finishes.
    f.vault.save(lh::kGrantedToken);
    QVERIFY(QTest::qWaitFor([&] { return m->entry(id)->status == DownloadStatus::Done; }, 20000));
    // Its weights are random bytes: downloaded and verified, but not a folder the model list takes,
    // and the panel says so instead of the old error.
    QCOMPARE(m->entry(id)->model_id, 0);
    QVERIFY2(f.panel.errorLabel()->text().contains("not a model folder InferDesk can load"),
             qPrintable(f.panel.errorLabel()->text()));
    QVERIFY(!f.panel.showModelButton()->isEnabled());
    bool authorized = false;
    for (const auto& r : f.hub.requests_for("/model.safetensors", ""))  // the token opened resolve/
      authorized = authorized || (r["auth"].get<bool>() && r["status"].get<int>() < 400 &&
                                  r["path"].get<std::string>().find("/resolve/") != std::string::npos);
    QVERIFY(authorized);
    // Finished entries can be removed from the list; the files stay in the cache.
    const QString folder = m->entry(id)->snapshot_dir;
    QVERIFY(m->remove(id));
    QCOMPARE(f.panel.model()->rowCount(), 0);
    QVERIFY(QFileInfo::exists(folder + "/model.safetensors"));
  }

  void theMainWindowHasTheCommandsAndTheWizardUsesHfEndpoint() {
    lh::LocalHub hub;
    QTemporaryDir dir;
    // The app reads the Hub's place from the environment (core/hub's reader): point it here.
    qputenv("HF_ENDPOINT", QByteArray::fromStdString(hub.url()));
    qputenv("HF_HUB_CACHE", (dir.path() + "/hub").toUtf8());
    qputenv("XDG_CONFIG_HOME", (dir.path() + "/config").toUtf8());
    qunsetenv("HF_TOKEN");
    qputenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/inferdesk-test");  // no real keyring
    gt::ShownMainWindow app;
    const MenuCommands& c = app.window.commands();
    QVERIFY(c.downloadModel && c.downloads && c.hubToken);
    QCOMPARE(c.downloadModel->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_D));
    QCOMPARE(c.downloads->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_J));
    QVERIFY(shortcutsTable(c).contains("Download a model"));
    bool in_help = false;
    for (QAction* top : app.window.menuBar()->actions())
      if (top->text().remove('&') == "Help")
        for (QAction* a : top->menu()->actions()) in_help = in_help || a == c.downloadModel;
    QVERIFY(in_help);
    auto* dock = app.window.findChild<QDockWidget*>("downloadsDock");
    QVERIFY(dock && dock->isHidden());
    c.downloads->trigger();
    QVERIFY(dock->isVisible());
    c.downloadModel->trigger();
    auto* wizard = app.window.findChild<DownloadWizard*>();
    QVERIFY(wizard);
    c.downloadModel->trigger();  // one wizard at a time
    QCOMPARE(app.window.findChildren<DownloadWizard*>().size(), 1);
    wizard->searchPage()->queryEdit()->setText("tiny");
    wizard->searchPage()->search();
    QVERIFY(QTest::qWaitFor([&] { return wizard->searchPage()->results()->topLevelItemCount() == 1; }, 20000));
    QVERIFY(!hub.requests_for("/api/models").empty());
    // "Show in Models" after the quantize step chose FP8: the load form has it ticked.
    auto* feature = app.window.findChild<HubFeature*>("hubFeature");
    QVERIFY(feature);
    const AddModelResult added = app.window.modelsPage()->manager()->addFolder(gt::fixture("tiny-chat"));
    QVERIFY(added.ok);
    set_load_quantization(app.session.context().settings, added.id, LoadQuantization::Fp8);
    QCOMPARE(app.window.modelsPage()->quantizeChoice()->currentData().toString(), QString("none"));
    feature->showModel(added.id);
    QCOMPARE(app.window.currentPage(), Page::Models);
    QCOMPARE(app.window.modelsPage()->selectedId(), added.id);
    QCOMPARE(app.window.modelsPage()->quantizeChoice()->currentData().toString(), QString("fp8"));
    for (const char* v : {"HF_ENDPOINT", "HF_HUB_CACHE", "XDG_CONFIG_HOME", "DBUS_SESSION_BUS_ADDRESS"}) qunsetenv(v);
  }
};

QTEST_MAIN(TestHubParts)
#include "test_hub_parts.moc"
