#include "gui/dashboard/reference_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace inferdesk::gui {
namespace {

QTableWidget* table(const QStringList& headers, QWidget* parent) {
  auto* t = new QTableWidget(0, static_cast<int>(headers.size()), parent);
  t->setHorizontalHeaderLabels(headers);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->verticalHeader()->hide();
  t->setWordWrap(true);
  t->horizontalHeader()->setStretchLastSection(true);
  return t;
}

void add_row(QTableWidget* t, const QStringList& cells, const QString& tooltip) {
  const int r = t->rowCount();
  t->insertRow(r);
  for (int c = 0; c < cells.size(); ++c) {
    auto* item = new QTableWidgetItem(cells[c]);
    item->setToolTip(tooltip);
    t->setItem(r, c, item);
  }
}

}  // namespace

ReferenceView::ReferenceView(const ReferenceData& d, QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  auto* banner = new QLabel(d.error.isEmpty()
                                ? tr("<b>Published, not measured here.</b> Claims made by others (edition %1), each "
                                     "with its source; measure your own on the Run tab.")
                                      .arg(d.edition)
                                : tr("<b>The published comparison could not be read:</b> %1").arg(d.error.toHtmlEscaped()),
                            this);
  banner->setObjectName("referenceBanner");
  banner->setWordWrap(true);
  v->addWidget(banner);
  auto source_text = [&d](const QString& id) {
    const ReferenceSource* s = d.source(id);
    return s ? s->name : tr("(no source)");
  };
  auto source_tip = [&d](const QString& id) {
    const ReferenceSource* s = d.source(id);
    return s ? s->name + "\n" + s->url : QString();
  };
  engines_ = table({tr("Engine"), tr("Quantization"), tr("Hardware"), tr("Setup"), tr("Latency claimed"), tr("Source")},
                   this);
  engines_->setObjectName("referenceEngines");
  for (const auto& e : d.engines)
    add_row(engines_, {e.name, e.quantization.join(", "), e.hardware.join(", "), e.setup, e.latency,
                       source_text(e.source)},
            source_tip(e.source));
  figures_ = table({tr("Engine"), tr("Model / GPU"), tr("Metric"), tr("Published value"), tr("Conditions"), tr("Source")},
                   this);
  figures_->setObjectName("referenceFigures");
  for (const auto& f : d.figures)
    // Figures published without a model or GPU field still say where they were measured.
    add_row(figures_, {f.engine, QStringList({f.model, f.gpu}).filter(QRegularExpression(".")).join(" · ").isEmpty()
                                     ? f.conditions
                                     : QStringList({f.model, f.gpu}).filter(QRegularExpression(".")).join(" · "),
                       f.metric, f.value + " " + f.unit, f.conditions, source_text(f.source)},
            source_tip(f.source));
  for (QTableWidget* t : {engines_, figures_}) t->resizeColumnsToContents();
  v->addWidget(new QLabel(tr("<b>Engines</b>"), this));
  v->addWidget(engines_, 1);
  v->addWidget(new QLabel(tr("<b>Published figures</b>"), this));
  v->addWidget(figures_, 1);
}

}  // namespace inferdesk::gui
