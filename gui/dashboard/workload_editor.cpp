#include "gui/dashboard/workload_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace inferdesk::gui {
namespace {

QSpinBox* spin(QWidget* parent, int lo, int hi, const char* name = nullptr) {
  auto* s = new QSpinBox(parent);
  s->setRange(lo, hi);
  if (name) s->setObjectName(name);
  return s;
}

// A line edit with a "…" button that fills it from a file (or folder) dialog.
QWidget* with_browse(QLineEdit* edit, bool folder) {
  auto* w = new QWidget(edit->parentWidget());
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  edit->setParent(w);
  h->addWidget(edit, 1);
  auto* b = new QPushButton(QObject::tr("\u2026"), w);
  b->setMaximumWidth(32);
  h->addWidget(b);
  QObject::connect(b, &QPushButton::clicked, edit, [edit, folder] {
    const QString p = folder ? QFileDialog::getExistingDirectory(edit, QObject::tr("Tokenizer folder"))
                             : QFileDialog::getOpenFileName(edit, QObject::tr("ShareGPT file"), {}, "JSON (*.json)");
    if (!p.isEmpty()) edit->setText(p);
  });
  return w;
}

}  // namespace

WorkloadEditor::WorkloadEditor(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  auto* top = new QFormLayout();
  preset_ = new QComboBox(this);
  preset_->setObjectName("workloadPreset");
  for (const auto& p : workload_presets()) preset_->addItem(p.name);
  label_ = new QLineEdit(this);
  label_->setPlaceholderText(tr("the endpoint's name"));
  top->addRow(tr("Preset"), preset_);
  top->addRow(tr("Run label"), label_);
  v->addLayout(top);
  auto* row = new QHBoxLayout();
  row->addWidget(buildDatasetBox(), 1);
  row->addWidget(buildLoadBox(), 1);
  v->addLayout(row);
  v->addStretch(1);  // spare height (fields hidden) goes below the boxes
  connect(preset_, &QComboBox::activated, this, &WorkloadEditor::applyPreset);
  connect(dataset_, &QComboBox::currentIndexChanged, this, &WorkloadEditor::updateVisibility);
  connect(sweep_, &QComboBox::currentIndexChanged, this, &WorkloadEditor::updateVisibility);
  connect(tokenizer_, &QLineEdit::textChanged, this, &WorkloadEditor::updateVisibility);
  // Reserve the height of the tallest field set (shared prefix, token ids, a value sweep), so the
  // Run button and the live plot below do not jump when fields come and go.
  dataset_->setCurrentIndex(static_cast<int>(Dataset::Prefix));
  sweep_->setCurrentIndex(static_cast<int>(SweepKind::Concurrency));
  updateVisibility();
  setMinimumHeight(sizeHint().height());
  applyPreset(0);
}

QWidget* WorkloadEditor::buildDatasetBox() {
  auto* box = new QGroupBox(tr("Prompts"), this);
  data_form_ = new QFormLayout(box);
  dataset_ = new QComboBox(box);
  dataset_->setObjectName("dataset");
  dataset_->addItems({tr("Random (vLLM's random)"), tr("ShareGPT file"), tr("Shared prefix"), tr("Multi-turn chat")});
  input_ = spin(box, 1, 131072, "inputLen");
  output_ = spin(box, 0, 32768, "outputLen");
  output_->setSpecialValueText(tr("the replies' own"));
  range_ = new QDoubleSpinBox(box);
  range_->setRange(0, 0.99);
  range_->setSingleStep(0.1);
  range_->setToolTip(tr("Lengths are drawn uniformly from len \u00d7 [1 - r, 1 + r] (vLLM's --random-range-ratio)"));
  sharegpt_ = new QLineEdit(box);
  sharegpt_->setObjectName("sharegptPath");
  prefixes_ = spin(box, 1, 10000);
  prefix_len_ = spin(box, 1, 131072);
  turns_ = spin(box, 1, 100);
  tokenizer_ = new QLineEdit(box);
  tokenizer_->setObjectName("tokenizerDir");
  tokenizer_->setToolTip(tr("The target model's folder: prompts become text of exactly the token count asked for. "
                            "Empty: token-id prompts (random and shared prefix only)."));
  vocab_ = spin(box, 11, 1 << 24);
  vocab_->setToolTip(tr("Token-id prompts use ids below this value: keep it under the smallest vocabulary "
                        "of the engines you compare."));
  api_ = new QComboBox(box);
  api_->setObjectName("api");
  api_->addItems({tr("Completions (/v1/completions)"), tr("Chat (/v1/chat/completions)")});
  ignore_eos_ = new QCheckBox(tr("ignore_eos (exact output lengths)"), box);
  ignore_eos_->setToolTip(tr("Sent only when checked; servers that reject unknown fields then still work."));
  data_form_->addRow(tr("Dataset"), dataset_);
  data_form_->addRow(tr("ShareGPT file"), with_browse(sharegpt_, false));
  data_form_->addRow(tr("Input tokens"), input_);
  data_form_->addRow(tr("Output tokens"), output_);
  data_form_->addRow(tr("Range ratio"), range_);
  data_form_->addRow(tr("Prefixes"), prefixes_);
  data_form_->addRow(tr("Prefix tokens"), prefix_len_);
  data_form_->addRow(tr("Turns"), turns_);
  data_form_->addRow(tr("Tokenizer"), with_browse(tokenizer_, true));
  data_form_->addRow(tr("Token ids below"), vocab_);
  data_form_->addRow(tr("API"), api_);
  data_form_->addRow(QString(), ignore_eos_);
  return box;
}

QWidget* WorkloadEditor::buildLoadBox() {
  auto* box = new QGroupBox(tr("Load"), this);
  load_form_ = new QFormLayout(box);
  requests_ = spin(box, 1, 100000, "requestsPerPoint");
  rate_ = new QDoubleSpinBox(box);
  rate_->setRange(0, 100000);
  rate_->setDecimals(2);
  rate_->setSpecialValueText(tr("all at once"));
  burst_ = new QDoubleSpinBox(box);
  burst_->setRange(0.01, 1000);
  burst_->setToolTip(tr("Gamma shape of the arrival gaps: 1 is Poisson, below 1 burstier, above 1 steadier"));
  cap_ = spin(box, 0, 100000, "maxConcurrency");
  cap_->setSpecialValueText(tr("no cap"));
  sweep_ = new QComboBox(box);
  sweep_->setObjectName("sweepKind");
  sweep_->addItems({tr("None (one point)"), tr("Max concurrency list"), tr("Request rate list"), tr("guidellm sweep")});
  sweep_values_ = new QLineEdit(box);
  sweep_values_->setObjectName("sweepValues");
  sweep_values_->setToolTip(tr("Comma-separated, e.g. 1, 4, 16"));
  guidellm_points_ = spin(box, 3, 100);
  guidellm_points_->setToolTip(tr("A synchronous run, a throughput run, then rates evenly spaced between them"));
  warmup_ = spin(box, 0, 1000, "warmup");
  warmup_->setToolTip(tr("Requests sent first, one at a time, and left out of the figures"));
  seed_ = spin(box, 0, 1 << 30);
  seed_->setToolTip(tr("The same seed gives the same prompts and arrivals on every engine"));
  goodput_ = new QLineEdit(box);
  goodput_->setObjectName("goodput");
  goodput_->setPlaceholderText("ttft:500 tpot:50 e2el:2000");
  goodput_->setToolTip(tr("Goodput SLOs in milliseconds (vLLM's --goodput); empty: none"));
  load_form_->addRow(tr("Requests per point"), requests_);
  load_form_->addRow(tr("Request rate (/s)"), rate_);
  load_form_->addRow(tr("Burstiness"), burst_);
  load_form_->addRow(tr("Max concurrency"), cap_);
  load_form_->addRow(tr("Sweep"), sweep_);
  load_form_->addRow(tr("Sweep values"), sweep_values_);
  load_form_->addRow(tr("guidellm points"), guidellm_points_);
  load_form_->addRow(tr("Warm-up requests"), warmup_);
  load_form_->addRow(tr("Seed"), seed_);
  load_form_->addRow(tr("Goodput SLOs"), goodput_);
  return box;
}

void WorkloadEditor::updateVisibility() {
  const auto d = static_cast<Dataset>(dataset_->currentIndex());
  const auto s = static_cast<SweepKind>(sweep_->currentIndex());
  data_form_->setRowVisible(sharegpt_->parentWidget(), d == Dataset::ShareGpt);
  data_form_->setRowVisible(input_, d != Dataset::ShareGpt);
  data_form_->setRowVisible(range_, d == Dataset::Random);
  data_form_->setRowVisible(prefixes_, d == Dataset::Prefix);
  data_form_->setRowVisible(prefix_len_, d == Dataset::Prefix);
  data_form_->setRowVisible(turns_, d == Dataset::MultiTurn);
  data_form_->setRowVisible(api_, d != Dataset::MultiTurn);
  // Token ids are drawn only when there is no tokenizer to write text with.
  const bool ids = tokenizer_->text().trimmed().isEmpty() && default_tokenizer_.isEmpty();
  data_form_->setRowVisible(vocab_, ids && (d == Dataset::Random || d == Dataset::Prefix));
  load_form_->setRowVisible(sweep_values_, s == SweepKind::Concurrency || s == SweepKind::Rate);
  load_form_->setRowVisible(guidellm_points_, s == SweepKind::Guidellm);
  tokenizer_->setPlaceholderText(default_tokenizer_.isEmpty() ? tr("none: token-id prompts") : default_tokenizer_);
}

void WorkloadEditor::setDefaultTokenizer(const QString& dir) {
  default_tokenizer_ = dir;
  updateVisibility();
}

QString WorkloadEditor::label() const { return label_->text(); }

void WorkloadEditor::applyPreset(int index) {
  const auto presets = workload_presets();
  if (index < 0 || index >= static_cast<int>(presets.size())) return;
  WorkloadSpec w = presets[static_cast<size_t>(index)].spec;
  const WorkloadSpec now = spec();
  w.seed = now.seed;
  w.token_id_max = vocab_->value() > 11 ? now.token_id_max : w.token_id_max;
  w.tokenizer_dir = tokenizer_->text();
  w.chat_api = now.chat_api;
  setSpec(w);
  preset_->setCurrentIndex(index);
}

WorkloadSpec WorkloadEditor::spec() const {
  WorkloadSpec w;
  w.preset = preset_->currentText();
  w.dataset = static_cast<Dataset>(dataset_->currentIndex());
  w.input_len = input_->value();
  w.output_len = output_->value();
  w.range_ratio = range_->value();
  w.sharegpt_path = sharegpt_->text().trimmed();
  w.num_prefixes = prefixes_->value();
  w.prefix_len = prefix_len_->value();
  w.turns = turns_->value();
  w.tokenizer_dir = tokenizer_->text().trimmed().isEmpty() ? default_tokenizer_ : tokenizer_->text().trimmed();
  w.chat_api = api_->currentIndex() == 1;
  w.ignore_eos = ignore_eos_->isChecked();
  w.requests_per_point = requests_->value();
  w.request_rate = rate_->value();
  w.burstiness = burst_->value();
  w.max_concurrency = cap_->value();
  w.sweep = static_cast<SweepKind>(sweep_->currentIndex());
  w.sweep_values = sweep_values_->text();
  w.guidellm_points = guidellm_points_->value();
  w.warmup = warmup_->value();
  w.seed = static_cast<uint64_t>(seed_->value());
  w.token_id_max = vocab_->value();
  w.goodput = goodput_->text().trimmed();
  return w;
}

void WorkloadEditor::setSpec(const WorkloadSpec& w) {
  dataset_->setCurrentIndex(static_cast<int>(w.dataset));
  input_->setValue(w.input_len);
  output_->setValue(w.output_len);
  range_->setValue(w.range_ratio);
  sharegpt_->setText(w.sharegpt_path);
  prefixes_->setValue(w.num_prefixes);
  prefix_len_->setValue(w.prefix_len);
  turns_->setValue(w.turns);
  tokenizer_->setText(w.tokenizer_dir == default_tokenizer_ ? QString() : w.tokenizer_dir);
  api_->setCurrentIndex(w.chat_api ? 1 : 0);
  ignore_eos_->setChecked(w.ignore_eos);
  requests_->setValue(w.requests_per_point);
  rate_->setValue(w.request_rate);
  burst_->setValue(w.burstiness);
  cap_->setValue(w.max_concurrency);
  sweep_->setCurrentIndex(static_cast<int>(w.sweep));
  sweep_values_->setText(w.sweep_values);
  guidellm_points_->setValue(w.guidellm_points);
  warmup_->setValue(w.warmup);
  seed_->setValue(static_cast<int>(w.seed));
  vocab_->setValue(w.token_id_max);
  goodput_->setText(w.goodput);
  updateVisibility();
}

}  // namespace inferdesk::gui
