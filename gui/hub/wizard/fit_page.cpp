#include "gui/hub/wizard/fit_page.h"

#include <QEvent>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "gui/app/theme.h"
#include "gui/models/model_facts.h"

namespace inferdesk::gui {

namespace {

QString context_header(qint64 tokens) {
  if (tokens >= 1024 && tokens % 1024 == 0) return QObject::tr("%1K tokens").arg(tokens / 1024);
  return QObject::tr("%1 tokens").arg(tokens);
}

}  // namespace

FitPage::FitPage(WizardServices& services, WizardState& state) : services_(services), state_(state) {
  setObjectName("fitPage");
  setTitle(tr("Will it fit?"));
  setSubTitle(tr("Memory for the weights, the KV cache of each context length and the activations, before "
                 "anything is downloaded. Pick the variant to download."));
  auto* layout = new QVBoxLayout(this);
  machine_ = new QLabel();
  machine_->setObjectName("fitMachine");
  machine_->setWordWrap(true);
  layout->addWidget(machine_);
  table_ = new QTableWidget();
  table_->setObjectName("fitTable");
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  layout->addWidget(table_, 1);
  note_ = new QLabel();
  note_->setWordWrap(true);
  layout->addWidget(note_);
  connect(table_, &QTableWidget::itemSelectionChanged, this, [this] {
    const int v = selectedVariant();
    note_->setText(v >= 0 ? state_.overview->variants[v].note : QString());
    emit completeChanged();
  });
}

void FitPage::initializePage() {
  memory_ = services_.machine ? services_.machine() : MachineMemory::probe();
  const QString gpu = memory_.gpu_usable ? tr("GPU: %1, %2 free").arg(memory_.gpu_name, format_bytes(memory_.gpu_free))
                                         : tr("No usable GPU: %1").arg(memory_.gpu_reason);
  machine_->setText(tr("%1. RAM: %2 available.").arg(gpu, format_bytes(memory_.ram_available)));
  rows_ = state_.overview ? fit_table(*state_.overview, memory_) : std::vector<FitRow>{};
  fill();
  // The first variant that can be downloaded is the default choice (the repository's own weights).
  int pick = state_.variant;
  for (int i = 0; pick < 0 && i < static_cast<int>(rows_.size()); ++i)
    if (rows_[i].variant.downloadable) pick = i;
  if (pick >= 0) selectVariant(pick);
}

void FitPage::fill() {
  table_->clear();
  const auto contexts = state_.overview && state_.overview->config
                            ? fit_contexts(state_.overview->config->max_position_embeddings)
                            : std::vector<qint64>{};
  QStringList headers{tr("Variant"), tr("Download")};
  for (qint64 c : contexts) headers << context_header(c);
  table_->setColumnCount(headers.size());
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(static_cast<int>(rows_.size()));
  const StatusColors colors = statusColors(palette());
  for (int r = 0; r < static_cast<int>(rows_.size()); ++r) {
    const FitRow& row = rows_[r];
    auto flags = row.variant.downloadable ? Qt::ItemIsEnabled | Qt::ItemIsSelectable : Qt::ItemFlags{};
    auto put = [&](int col, const QString& text, const QString& tip) {
      auto* item = new QTableWidgetItem(text);
      item->setFlags(flags);
      item->setToolTip(tip);
      table_->setItem(r, col, item);
      return item;
    };
    put(0, row.variant.label, row.variant.note);
    put(1, format_bytes(row.variant.file_bytes), {});
    for (size_t c = 0; c < row.cells.size(); ++c) {
      const FitCell& cell = row.cells[c];
      QTableWidgetItem* item = put(static_cast<int>(c) + 2, fit_text(cell.fit), cell.detail);
      if (cell.fit == Fit::Gpu) item->setForeground(colors.good_text);
      if (cell.fit == Fit::None) item->setForeground(colors.bad_text);
    }
  }
  table_->resizeColumnsToContents();
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
}

bool FitPage::selectVariant(int index) {
  if (index < 0 || index >= static_cast<int>(rows_.size()) || !rows_[index].variant.downloadable) return false;
  table_->selectRow(index);
  return true;
}

int FitPage::selectedVariant() const {
  const auto rows = table_->selectionModel() ? table_->selectionModel()->selectedRows() : QModelIndexList{};
  return rows.isEmpty() ? -1 : rows.front().row();
}

bool FitPage::isComplete() const {
  const int v = selectedVariant();
  return v >= 0 && rows_[v].variant.downloadable;
}

bool FitPage::validatePage() {
  state_.variant = selectedVariant();
  const RepoVariant* v = state_.chosenVariant();
  state_.load_fp8 = v && v->quantize_on_load;
  return v != nullptr;
}

void FitPage::changeEvent(QEvent* event) {
  QWizardPage::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && !rows_.empty()) {
    const int keep = selectedVariant();
    fill();
    if (keep >= 0) selectVariant(keep);
  }
}

}  // namespace inferdesk::gui
