#include "gui/dashboard/results_view.h"

#include <QDateTime>
#include <QDir>
#include <QEvent>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include "core/store/store.h"
#include "gui/dashboard/metric_text.h"
#include "gui/dashboard/result_file_import.h"

namespace inferdesk::gui {

ResultsView::ResultsView(AppContext& ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  auto* row = new QHBoxLayout(this);
  auto* splitter = new QSplitter(this);
  row->addWidget(splitter);
  auto* left = new QWidget(splitter);
  auto* lv = new QVBoxLayout(left);
  lv->setContentsMargins(0, 0, 0, 0);
  auto* heading = new QLabel(tr("<b>Saved runs</b> (check two or more to compare)"), left);
  heading->setWordWrap(true);
  lv->addWidget(heading);
  list_ = new QListWidget(left);
  list_->setObjectName("savedRuns");
  // Long labels are elided (full text in the tooltip): the list never scrolls sideways.
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_->setTextElideMode(Qt::ElideRight);
  list_->setUniformItemSizes(true);
  list_->setResizeMode(QListView::Adjust);
  list_->setMinimumWidth(180);
  lv->addWidget(list_, 1);
  lv->addWidget(buildButtons(left));
  auto* right = new QWidget(splitter);
  auto* rv = new QVBoxLayout(right);
  rv->setContentsMargins(0, 0, 0, 0);
  summary_ = new QLabel(tr("Check runs and press Compare."), right);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  rv->addWidget(summary_);
  tabs_ = new QTabWidget(right);
  tabs_->setObjectName("resultTabs");
  // The plots scroll inside their tab: five charts never set the window's height.
  auto* scroll = new QScrollArea(tabs_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* plots = new QWidget(scroll);
  grid_ = new QGridLayout(plots);
  grid_->setContentsMargins(0, 0, 0, 0);
  scroll->setWidget(plots);
  tabs_->addTab(scroll, tr("Plots"));
  auto* detail_tab = new QWidget(tabs_);
  auto* dv = new QVBoxLayout(detail_tab);
  details_title_ = new QLabel(tr("Select a saved run to see every tool's figures for each of its points."), detail_tab);
  details_title_->setWordWrap(true);
  dv->addWidget(details_title_);
  details_ = new QTableWidget(detail_tab);
  details_->setObjectName("runDetails");
  details_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  dv->addWidget(details_, 1);
  tabs_->addTab(detail_tab, tr("Run details (all tools)"));
  definitions_ = make_definitions_table(tabs_);
  tabs_->addTab(definitions_, tr("Definitions"));
  rv->addWidget(tabs_, 1);
  splitter->setStretchFactor(1, 3);
  splitter->setSizes({280, 920});
  connect(list_, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
    if (item) showDetails(item->data(Qt::UserRole).toLongLong());
  });
  reload();
}

QWidget* ResultsView::buildButtons(QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* buttons = new QGridLayout(box);
  buttons->setContentsMargins(0, 0, 0, 0);
  auto* compare_button = new QPushButton(tr("Compare checked"), box);
  auto* json = new QPushButton(tr("Export JSON\u2026"), box);
  auto* csv = new QPushButton(tr("Export CSV\u2026"), box);
  auto* plots = new QPushButton(tr("Save plots\u2026"), box);
  auto* remove = new QPushButton(tr("Delete"), box);
  auto* import = new QPushButton(tr("Import result file\u2026"), box);
  import->setObjectName("importResult");
  import->setToolTip(tr("vLLM (--save-result), GenAI-Perf (profile_export_genai_perf.json), guidellm "
                        "(benchmarks.json) or InferDesk result files"));
  buttons->addWidget(compare_button, 0, 0);
  buttons->addWidget(remove, 0, 1);
  buttons->addWidget(json, 1, 0);
  buttons->addWidget(csv, 1, 1);
  buttons->addWidget(plots, 2, 0);
  buttons->addWidget(import, 2, 1);
  connect(compare_button, &QPushButton::clicked, this, [this] { compare(checkedIds()); });
  connect(remove, &QPushButton::clicked, this, [this] {
    try {
      for (auto id : checkedIds()) store::BenchStore(ctx_.db).remove(id);
    } catch (const std::exception& e) {
      emit errorMessage(tr("could not delete: %1").arg(e.what()));
    }
    reload();
  });
  auto export_one = [this](bool as_csv) {
    const auto ids = checkedIds();
    if (ids.empty()) return emit errorMessage(tr("Check the run to export."));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export run"), QString(),
                                                      as_csv ? "CSV (*.csv)" : "JSON (*.json)");
    QString error;
    if (!path.isEmpty() && !exportRun(ids.front(), path, as_csv, &error)) emit errorMessage(error);
  };
  connect(json, &QPushButton::clicked, this, [export_one] { export_one(false); });
  connect(csv, &QPushButton::clicked, this, [export_one] { export_one(true); });
  connect(plots, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Save plots as PNG and SVG into"));
    QString error;
    if (!dir.isEmpty() && savePlots(dir, &error).isEmpty()) emit errorMessage(error);
  });
  connect(import, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Import a benchmark result"), QString(),
                                                      tr("Result files (*.json);;All files (*)"));
    QString error;
    if (!path.isEmpty() && importFile(path, &error) == 0)
      QMessageBox::warning(this, tr("Import result file"), tr("Could not import %1:\n%2").arg(path, error));
  });
  return box;
}

std::int64_t ResultsView::importFile(const QString& path, QString* error) {
  try {
    const DashboardRun run = run_from_result_file(path);
    const std::int64_t id = store::BenchStore(ctx_.db).save_run(to_row(run));
    reload();
    for (int i = 0; i < list_->count(); ++i)
      if (list_->item(i)->data(Qt::UserRole).toLongLong() == id) list_->setCurrentRow(i);
    return id;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return 0;
  }
}

void ResultsView::showDetails(std::int64_t id) {
  try {
    const DashboardRun run = from_row(store::BenchStore(ctx_.db).get(id));
    details_title_->setText(tr("<b>%1</b>: each point as vLLM, GenAI-Perf, llmperf and guidellm report it "
                               "(hover a row for its definition)")
                                .arg(QString::fromStdString(run.label).toHtmlEscaped()));
    fill_detail_table(details_, run);
  } catch (const std::exception& e) {
    emit errorMessage(tr("could not read run %1: %2").arg(id).arg(e.what()));
  }
}

void ResultsView::reload() {
  const auto checked = checkedIds();
  list_->clear();
  try {
    for (const auto& r : store::BenchStore(ctx_.db).list()) {
      const QString when = QDateTime::fromMSecsSinceEpoch(r.started_at).toString("yyyy-MM-dd hh:mm");
      const QString engine = r.engine.empty() ? tr("engine unknown") : QString::fromStdString(r.engine);
      const QString text = QString("#%5 %1 \u00b7 %2 \u00b7 %3 (%4)")
                               .arg(QString::fromStdString(r.label), engine, when, QString::fromStdString(r.status))
                               .arg(r.id);
      auto* item = new QListWidgetItem(text, list_);
      item->setToolTip(QString("%1<br>%2 %3").arg(text.toHtmlEscaped(), QString::fromStdString(r.model).toHtmlEscaped(),
                                                  QString::fromStdString(r.base_url).toHtmlEscaped()));
      // A token width: the view then lays items out at its own width and elides the rest.
      item->setSizeHint(QSize(1, list_->fontMetrics().height() + 8));
      item->setData(Qt::UserRole, QVariant::fromValue<qint64>(r.id));
      item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
      item->setCheckState(std::find(checked.begin(), checked.end(), r.id) != checked.end() ? Qt::Checked
                                                                                          : Qt::Unchecked);
    }
  } catch (const std::exception& e) {
    emit errorMessage(tr("could not read the saved runs: %1").arg(e.what()));
  }
}

std::vector<std::int64_t> ResultsView::checkedIds() const {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < list_->count(); ++i)
    if (list_->item(i)->checkState() == Qt::Checked) ids.push_back(list_->item(i)->data(Qt::UserRole).toLongLong());
  return ids;
}

void ResultsView::compare(const std::vector<std::int64_t>& ids) {
  for (int i = 0; i < list_->count(); ++i) {
    const auto id = list_->item(i)->data(Qt::UserRole).toLongLong();
    list_->item(i)->setCheckState(std::find(ids.begin(), ids.end(), id) != ids.end() ? Qt::Checked : Qt::Unchecked);
  }
  shown_.clear();
  QStringList lines;
  for (auto id : ids) {
    try {
      shown_.push_back(from_row(store::BenchStore(ctx_.db).get(id)));
      const DashboardRun& r = shown_.back();
      lines << QString("<b>%1</b>: %2 %3 · %4 · GPU %5 · CPU %6 · flags: %7")
                   .arg(QString::fromStdString(r.label).toHtmlEscaped(),
                        r.engine.empty() ? tr("engine unknown") : QString::fromStdString(r.engine).toHtmlEscaped(),
                        QString::fromStdString(r.engine_version), QString::fromStdString(r.model).toHtmlEscaped(),
                        QString::fromStdString(r.machine.value("gpu", std::string("?"))).toHtmlEscaped(),
                        QString::fromStdString(r.machine.value("cpu", std::string("?"))).toHtmlEscaped(),
                        QString::fromStdString(r.engine_flags.empty() ? "none" : r.engine_flags).toHtmlEscaped());
    } catch (const std::exception& e) {
      emit errorMessage(tr("could not read run %1: %2").arg(id).arg(e.what()));
    }
  }
  summary_->setText(lines.isEmpty() ? tr("Check runs and press Compare.") : lines.join("<br>"));
  replot();
}

void ResultsView::replot() {
  for (QChartView* v : plots_) v->deleteLater();
  plots_.clear();
  if (shown_.empty()) return;
  const PlotKind kinds[] = {PlotKind::Throughput, PlotKind::TokensOverTime, PlotKind::TtftPercentiles,
                            PlotKind::TpotPercentiles, PlotKind::LatencyCdf};
  int n = 0;
  for (PlotKind k : kinds) {
    QChartView* v = make_plot(k, shown_, this);
    grid_->addWidget(v, n / 2, n % 2);
    plots_ << v;
    ++n;
  }
}

void ResultsView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange)
    for (QChartView* v : plots_) style_chart(v->chart(), palette());
}

QStringList ResultsView::savePlots(const QString& dir, QString* error) {
  QStringList written;
  for (QChartView* v : plots_) {
    const QString stem = QDir(dir).filePath(v->objectName());
    if (!save_plot_png(v, stem + ".png", error) || !save_plot_svg(v, stem + ".svg", error)) return {};
    written << stem + ".png" << stem + ".svg";
  }
  if (written.isEmpty() && error) *error = tr("There are no plots: compare some runs first.");
  return written;
}

bool ResultsView::exportRun(std::int64_t id, const QString& path, bool csv, QString* error) {
  try {
    const DashboardRun run = from_row(store::BenchStore(ctx_.db).get(id));
    const std::string text = csv ? export_csv(run) : export_json(run).dump(2);
    QSaveFile f(path);  // atomic: a failed export never leaves half a file
    if (!f.open(QIODevice::WriteOnly) || f.write(text.data(), qint64(text.size())) != qint64(text.size()) ||
        !f.commit())
      throw std::runtime_error(("could not write " + path).toStdString());
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
}

}  // namespace inferdesk::gui
