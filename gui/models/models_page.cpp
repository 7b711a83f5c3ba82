#include "gui/models/models_page.h"

#include <algorithm>
#include <functional>

#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include "gui/app/theme.h"
#include "gui/engine/backends.h"

namespace inferdesk::gui {

namespace {
constexpr int kDefaultContext = 8192;
constexpr int kLongestContext = 1 << 24;  // the engine's limit; the model's own is checked apart
}  // namespace

ModelsPage::ModelsPage(AppContext& ctx, QWidget* parent) : QWidget(parent), ctx_(ctx), manager_(ctx, this) {
  buildUi();
  connect(&manager_, &ModelManager::statusMessage, status_, &QLabel::setText);
  if (EngineController* engine = ctx_.engine) {
    connect(engine, &EngineController::loadStarted, this, [this] {
      loading_ = true;
      progress_->setValue(0);
      progress_->setVisible(true);
      updateButtons();
    });
    connect(engine, &EngineController::loadProgress, this, &ModelsPage::onLoadProgress);
    connect(engine, &EngineController::modelLoaded, this, [this] {
      loading_ = false;
      loaded_ = true;
      progress_->setVisible(false);
      updateButtons();
    });
    connect(engine, &EngineController::loadFailed, this, [this](const QString& msg, bool cancelled) {
      loading_ = false;
      progress_->setVisible(false);
      updateButtons();
      if (!cancelled && isVisible()) QMessageBox::warning(this, tr("Loading failed"), msg);
    });
    connect(engine, &EngineController::modelUnloaded, this, [this] {
      loaded_ = false;
      updateButtons();
    });
  }
  if (manager_.table()->rowCount() > 0) table_->selectRow(0);
  showDetails();
}

QGroupBox* ModelsPage::buildLoadBox() {
  auto* load_box = new QGroupBox(tr("Load"));
  auto* form = new QFormLayout(load_box);
  backend_ = new QComboBox();
  backend_->addItem(tr("CPU"), "cpu");
  backend_->addItem(tr("CUDA (NVIDIA GPU)"), "cuda");
  const CudaStatus cuda = cuda_status();
  cuda_note_ = new QLabel();
  cuda_note_->setWordWrap(true);
  if (!cuda.usable) {
    if (auto* m = qobject_cast<QStandardItemModel*>(backend_->model())) {
      m->item(1)->setEnabled(false);
      m->item(1)->setToolTip(cuda.reason);
    }
    cuda_note_->setText(tr("<small>CUDA unavailable: %1</small>").arg(cuda.reason.toHtmlEscaped()));
  } else {
    cuda_note_->setText(tr("<small>GPU: %1</small>").arg(cuda.devices.join(", ").toHtmlEscaped()));
  }
  context_ = new QSpinBox();
  context_->setRange(16, kLongestContext);
  context_->setSingleStep(1024);
  context_->setValue(kDefaultContext);
  context_->setSuffix(tr(" tokens"));
  estimate_ = new QLabel();
  estimate_->setWordWrap(true);
  form->addRow(tr("Backend"), backend_);
  form->addRow(QString(), cuda_note_);
  form->addRow(tr("Context"), context_);
  quantize_ = new QComboBox();
  quantize_->addItem(tr("As published"), "none");
  quantize_->addItem(tr("FP8 on load (E4M3 per channel, activations per token)"), "fp8");
  quantize_->addItem(tr("INT8 on load (weight-only, per channel; CPU)"), "int8");
  quantize_->addItem(tr("INT4 on load (weight-only, groups of 128; CPU)"), "int4");
  quantize_->setToolTip(quantizeHelp());
  // Long item texts must not set the page's (and the window's) minimum width.
  for (QComboBox* box : {quantize_, kv_dtype_ = new QComboBox()}) {
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(14);
  }
  kv_dtype_->addItem(tr("Auto (the backend's precision)"), "auto");
  kv_dtype_->addItem(tr("FP8 (E4M3, half the memory)"), "fp8");
  kv_dtype_->addItem(tr("INT8 (per token and head; CPU)"), "int8");
  form->addRow(tr("Weights"), quantize_);
  form->addRow(tr("KV cache"), kv_dtype_);
  form->addRow(tr("Memory"), estimate_);
  auto* buttons = new QHBoxLayout();
  load_ = new QPushButton(tr("Load"));
  load_->setDefault(true);
  unload_ = new QPushButton(tr("Unload"));
  cancel_ = new QPushButton(tr("Cancel"));
  buttons->addWidget(load_);
  buttons->addWidget(unload_);
  buttons->addWidget(cancel_);
  form->addRow(buttons);
  progress_ = new QProgressBar();
  progress_->setRange(0, 1000);
  progress_->setTextVisible(true);
  progress_->setFormat(tr("loading weights %p%"));
  progress_->setVisible(false);
  form->addRow(progress_);
  return load_box;
}

void ModelsPage::buildUi() {
  auto* root = new QVBoxLayout(this);
  auto* title = new QLabel(tr("<h2>Models</h2>"));
  auto* intro = new QLabel(tr("Local Hugging Face folders (config.json + safetensors). Select one to "
                              "see what it is and what it will cost, then load it."));
  intro->setWordWrap(true);
  root->addWidget(title);
  root->addWidget(intro);

  auto* bar = new QHBoxLayout();
  add_ = new QPushButton(tr("Add folder…"));
  remove_ = new QPushButton(tr("Remove"));
  bar->addWidget(add_);
  bar->addWidget(remove_);
  bar->addStretch();
  root->addLayout(bar);

  table_ = new QTableView();
  table_->setModel(manager_.table());
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setSectionResizeMode(ModelTableModel::Name, QHeaderView::Stretch);
  table_->setAlternatingRowColors(true);
  table_->setMinimumHeight(140);
  root->addWidget(table_, 2);

  auto* lower = new QHBoxLayout();
  auto* facts_box = new QGroupBox(tr("Details"));
  auto* facts_layout = new QVBoxLayout(facts_box);
  details_ = new QLabel();
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  facts_layout->addWidget(details_);
  lower->addWidget(facts_box, 3);

  QGroupBox* load_box = buildLoadBox();
  lower->addWidget(load_box, 2);
  root->addLayout(lower, 1);

  status_ = new QLabel();
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  root->addWidget(status_);

  connect(add_, &QPushButton::clicked, this, &ModelsPage::addFolderWithDialog);
  connect(remove_, &QPushButton::clicked, this, [this] {
    if (const qint64 id = selectedId()) manager_.removeModel(id);
    showDetails();
  });
  connect(load_, &QPushButton::clicked, this, &ModelsPage::loadSelected);
  connect(unload_, &QPushButton::clicked, this, &ModelsPage::unloadWithConfirmation);
  connect(cancel_, &QPushButton::clicked, this, [this] { manager_.cancelLoad(); });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ModelsPage::showDetails);
  connect(manager_.table(), &QAbstractItemModel::rowsInserted, this,
          [this](const QModelIndex&, int first) { table_->selectRow(first); });
  connect(manager_.table(), &QAbstractItemModel::dataChanged, this, [this] { updateButtons(); });
  connect(backend_, &QComboBox::currentIndexChanged, this, &ModelsPage::updateEstimate);
  connect(context_, &QSpinBox::valueChanged, this, &ModelsPage::updateEstimate);
  connect(quantize_, &QComboBox::currentIndexChanged, this, &ModelsPage::updateEstimate);
  connect(kv_dtype_, &QComboBox::currentIndexChanged, this, &ModelsPage::updateEstimate);
}

qint64 ModelsPage::selectedId() const {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return 0;
  return rows.first().data(ModelTableModel::IdRole).toLongLong();
}

bool ModelsPage::selectModel(qint64 id) {
  const int row = manager_.table()->rowOf(id);
  if (row < 0) return false;
  table_->selectRow(row);
  showDetails();
  return true;
}

void ModelsPage::addFolderWithDialog() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Add a Hugging Face model folder"), QString(),
                                                        QFileDialog::ShowDirsOnly);
  if (dir.isEmpty()) return;
  const AddModelResult r = manager_.addFolder(dir);
  if (!r.ok) QMessageBox::warning(this, tr("Cannot add this folder"), r.error);
}

LoadPrecision ModelsPage::chosenPrecision() const {
  LoadPrecision p;
  const QString q = quantize_->isEnabled() ? quantize_->currentData().toString() : QString("none");
  p.quantization = q == "fp8"    ? LoadQuantization::Fp8
                   : q == "int8" ? LoadQuantization::Int8
                   : q == "int4" ? LoadQuantization::Int4
                                 : LoadQuantization::None;
  const QString kv = kv_dtype_->currentData().toString();
  p.kv_cache = kv == "fp8" ? KvCacheDtype::Fp8 : kv == "int8" ? KvCacheDtype::Int8 : KvCacheDtype::Auto;
  return p;
}

QString ModelsPage::quantizeHelp() const {
  return tr("Quantize an unquantized folder's projections as it loads, round-to-nearest: FP8 is about half the "
            "memory of BF16 and faster on GPUs with FP8 tensor cores; INT8 and INT4 (a half and about a quarter) "
            "run on the CPU backend. For AWQ, run `inferdesk-cli quantize --method awq` and add the folder it "
            "writes.");
}

bool ModelsPage::preferQuantization(LoadQuantization q) {
  const char* key = q == LoadQuantization::Fp8    ? "fp8"
                    : q == LoadQuantization::Int8 ? "int8"
                    : q == LoadQuantization::Int4 ? "int4"
                                                  : "none";
  const int i = quantize_->findData(QString(key));
  if (!quantize_->isEnabled() || i < 0) return false;
  quantize_->setCurrentIndex(i);
  return true;
}

void ModelsPage::loadSelected() {
  const qint64 id = selectedId();
  if (id == 0) {
    status_->setText(tr("select a model first"));
    return;
  }
  const QString backend = backend_->currentData().toString();
  const int context = context_->value();
  const LoadPrecision precision = chosenPrecision();
  // Loading replaces the loaded model: replies being written stop, so ask first.
  confirmStoppingReplies(tr("Stop and load"), [this, id, backend, context, precision] {
    QString reason;
    if (!manager_.load(id, backend, context, &reason, std::nullopt, precision) && isVisible())
      QMessageBox::warning(this, tr("Not loaded"), reason);
  });
}

void ModelsPage::showDetails() {
  const ModelRow* row = manager_.table()->find(selectedId());
  model_max_context_ = 0;
  if (!row) {
    details_->setText(manager_.table()->rowCount() == 0
                          ? tr("No models yet. Use <b>Add folder…</b> to add a local Hugging Face "
                               "model folder.")
                          : tr("Select a model."));
    estimate_->clear();
    updateButtons();
    return;
  }
  if (!row->facts) {
    details_->setText(tr("<b>%1</b><br>%2<br>The saved details cannot be read; add the folder again.")
                          .arg(row->display_name.toHtmlEscaped(), row->path.toHtmlEscaped()));
  } else {
    const ModelFacts& f = *row->facts;
    QString params = format_count(f.params_total);
    if (f.is_moe())
      params += tr(" (%1 active per token: %2 of %3 experts)")
                    .arg(format_count(f.params_active))
                    .arg(f.experts_per_token)
                    .arg(f.num_experts);
    details_->setText(tr("<b>%1</b> <small>%2</small><table cellspacing=3>"
                         "<tr><td>Architecture</td><td>%3 %4</td></tr>"
                         "<tr><td>Parameters</td><td>%5</td></tr>"
                         "<tr><td>Weights</td><td>%6, %7 in %8 file(s)</td></tr>"
                         "<tr><td>Quantization</td><td>%14</td></tr>"
                         "<tr><td>Layers</td><td>%9</td></tr>"
                         "<tr><td>Context</td><td>%10 tokens</td></tr>"
                         "<tr><td>On disk</td><td>%11</td></tr>"
                         "<tr><td>Tokenizer</td><td>%12</td></tr>"
                         "<tr><td>Chat template</td><td>%13</td></tr></table>")
                          .arg(f.name.toHtmlEscaped(), f.path.toHtmlEscaped(), f.model_type.toHtmlEscaped(),
                               f.architecture.isEmpty() ? QString() : "(" + f.architecture.toHtmlEscaped() + ")",
                               params, f.dtype, format_bytes(f.weight_bytes))
                          .arg(f.num_shards)
                          .arg(f.num_layers)
                          .arg(f.context_length)
                          .arg(format_bytes(f.size_on_disk), f.has_tokenizer ? tr("yes") : tr("no"),
                               chatTemplateWords(f, tr("no (prompts are plain text)")))
                          .arg(f.quantization.isEmpty() ? tr("none") : f.quantization.toHtmlEscaped()));
    // A quantized folder loads as published: quantizing it again is not offered.
    const bool quantized = !f.quantization.isEmpty() && f.quantization != "none";
    if (quantized) quantize_->setCurrentIndex(0);
    quantize_->setEnabled(!quantized);
    quantize_->setToolTip(quantized ? tr("already quantized: %1").arg(f.quantization) : quantizeHelp());
    model_max_context_ = f.context_length;
    const int max_ctx = static_cast<int>(std::clamp<qint64>(f.context_length, 16, kLongestContext));
    const QSignalBlocker block(context_);
    context_->setValue(std::min(max_ctx, kDefaultContext));
  }
  updateEstimate();
  updateButtons();
}

void ModelsPage::updateEstimate() {
  const qint64 id = selectedId();
  if (id == 0) {
    estimate_->clear();
    return;
  }
  const StatusColors colors = statusColors(palette());
  auto coloured = [](const QColor& c, const QString& text) {
    return QString("<span style='color:%1'>%2</span>").arg(c.name(), text.toHtmlEscaped());
  };
  if (model_max_context_ > 0 && context_->value() > model_max_context_) {
    estimate_->setText(coloured(colors.bad_text, tr("%1 tokens is longer than this model's context of %2 tokens: "
                                                    "choose %2 or fewer")
                                                     .arg(context_->value())
                                                     .arg(model_max_context_)));
    updateButtons();
    return;
  }
  const MemoryCheck m = manager_.checkMemory(id, backend_->currentData().toString(), context_->value(), std::nullopt,
                                             chosenPrecision());
  if (!m.reason.isEmpty())
    estimate_->setText(coloured(colors.bad_text, m.reason));
  else
    estimate_->setText(coloured(colors.good_text, tr("fits: ") + m.summary));
  updateButtons();
}

void ModelsPage::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && estimate_) updateEstimate();
}

void ModelsPage::unloadWithConfirmation() {
  confirmStoppingReplies(tr("Stop and unload"), [this] { manager_.unload(); });
}

void ModelsPage::confirmStoppingReplies(const QString& action, std::function<void()> proceed) {
  EngineController* engine = ctx_.engine;
  const int running = engine ? engine->activeRequests() : 0;
  if (running == 0) {
    proceed();
    return;
  }
  const auto model = engine->loadedModel();
  auto* box = new QMessageBox(QMessageBox::Warning, tr("Stop the replies?"),
                              tr("%1 is writing %2. This stops %3; the text so far is kept.")
                                  .arg(model ? model->name : tr("The model"),
                                       running == 1 ? tr("a reply") : tr("%1 replies").arg(running),
                                       running == 1 ? tr("it") : tr("them")),
                              QMessageBox::Cancel, this);
  box->setObjectName("unloadConfirmation");
  QPushButton* yes = box->addButton(action, QMessageBox::DestructiveRole);
  box->setDefaultButton(QMessageBox::Cancel);
  box->setWindowModality(Qt::WindowModal);
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box, &QMessageBox::buttonClicked, this, [yes, proceed = std::move(proceed)](QAbstractButton* b) {
    if (b == yes) proceed();
  });
  box->open();
}

void ModelsPage::updateButtons() {
  const qint64 id = selectedId();
  const bool context_ok = model_max_context_ <= 0 || context_->value() <= model_max_context_;
  remove_->setEnabled(id != 0 && !loading_);
  load_->setEnabled(id != 0 && !loading_ && context_ok);
  unload_->setEnabled(loaded_ && !loading_);
  cancel_->setEnabled(loading_);
}

void ModelsPage::onLoadProgress(qint64 done, qint64 total) {
  progress_->setValue(total > 0 ? static_cast<int>(1000 * done / total) : 0);
}

}  // namespace inferdesk::gui
