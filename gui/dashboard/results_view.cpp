#include "gui/dashboard/results_view.h"

#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSaveFile>
#include <QSplitter>
#include <QVBoxLayout>

#include "core/store/store.h"
#include "gui/dashboard/metric_definitions.h"

namespace inferdesk::gui {

ResultsView::ResultsView(AppContext& ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  auto* row = new QHBoxLayout(this);
  auto* splitter = new QSplitter(this);
  row->addWidget(splitter);
  auto* left = new QWidget(splitter);
  auto* lv = new QVBoxLayout(left);
  lv->setContentsMargins(0, 0, 0, 0);
  lv->addWidget(new QLabel(tr("<b>Saved runs</b> (check two or more to compare)"), left));
  list_ = new QListWidget(left);
  list_->setObjectName("savedRuns");
  lv->addWidget(list_, 1);
  auto* buttons = new QGridLayout();
  auto* compare_button = new QPushButton(tr("Compare checked"), left);
  auto* json = new QPushButton(tr("Export JSON\u2026"), left);
  auto* csv = new QPushButton(tr("Export CSV\u2026"), left);
  auto* plots = new QPushButton(tr("Save plots\u2026"), left);
  auto* remove = new QPushButton(tr("Delete"), left);
  buttons->addWidget(compare_button, 0, 0);
  buttons->addWidget(remove, 0, 1);
  buttons->addWidget(json, 1, 0);
  buttons->addWidget(csv, 1, 1);
  buttons->addWidget(plots, 2, 0, 1, 2);
  lv->addLayout(buttons);
  QString legend = "<b>" + tr("Definitions") + "</b> (vLLM <i>bench serve</i>)<br>";
  for (const auto& d : dashboard_metric_definitions())
    legend += "<b>" + d.name.toHtmlEscaped() + "</b>: " + d.definition.toHtmlEscaped() + "<br>";
  auto* defs = new QLabel(legend, left);
  defs->setObjectName("metricDefinitions");
  defs->setWordWrap(true);
  lv->addWidget(defs);
  auto* right = new QWidget(splitter);
  auto* rv = new QVBoxLayout(right);
  rv->setContentsMargins(0, 0, 0, 0);
  summary_ = new QLabel(tr("Check runs and press Compare."), right);
  summary_->setWordWrap(true);
  rv->addWidget(summary_);
  grid_ = new QGridLayout();
  rv->addLayout(grid_, 1);
  splitter->setStretchFactor(1, 3);
  splitter->setSizes({300, 900});

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
  reload();
}

void ResultsView::reload() {
  const auto checked = checkedIds();
  list_->clear();
  try {
    for (const auto& r : store::BenchStore(ctx_.db).list()) {
      const QString when = QDateTime::fromMSecsSinceEpoch(r.started_at).toString("yyyy-MM-dd hh:mm");
      const QString engine = r.engine.empty() ? tr("engine unknown") : QString::fromStdString(r.engine);
      auto* item = new QListWidgetItem(QString("#%5 %1 · %2 · %3 (%4)")
                                           .arg(QString::fromStdString(r.label), engine,
                                                when, QString::fromStdString(r.status))
                                           .arg(r.id),
                                       list_);
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
                   .arg(QString::fromStdString(r.label).toHtmlEscaped(), QString::fromStdString(r.engine),
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
