#include "gui/hub/wizard/search_page.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "core/hub/hub_client.h"
#include "core/model/architectures.h"
#include "gui/hub/hub_service.h"

namespace inferdesk::gui {

QString architecture_cell(const hub::ModelSummary& m) {
  if (m.model_type.empty()) return QObject::tr("unknown");
  const QString type = QString::fromStdString(m.model_type);
  return find_architecture(m.model_type) ? QObject::tr("%1 (supported)").arg(type)
                                         : QObject::tr("%1 (not supported)").arg(type);
}

SearchPage::SearchPage(WizardServices& services, WizardState& state) : services_(services), state_(state) {
  setObjectName("searchPage");
  setTitle(tr("Find a model"));
  setSubTitle(tr("Search the Hugging Face Hub (%1) for text-generation models.").arg(services_.hub.endpoint()));
  auto* layout = new QVBoxLayout(this);
  auto* row = new QHBoxLayout();
  query_ = new QLineEdit();
  query_->setObjectName("searchEdit");
  query_->setPlaceholderText(tr("Model name, e.g. Qwen3 or Llama-3.2"));
  query_->setClearButtonEnabled(true);
  button_ = new QPushButton(tr("Search"));
  row->addWidget(query_, 1);
  row->addWidget(button_);
  layout->addLayout(row);
  results_ = new QTreeWidget();
  results_->setObjectName("searchResults");
  results_->setRootIsDecorated(false);
  results_->setUniformRowHeights(true);
  results_->setHeaderLabels({tr("Model"), tr("Downloads"), tr("Likes"), tr("Gated"), tr("Architecture")});
  results_->header()->setSectionResizeMode(Model, QHeaderView::Stretch);
  results_->header()->setStretchLastSection(false);
  layout->addWidget(results_, 1);
  status_ = new QLabel();
  status_->setObjectName("searchStatus");
  status_->setWordWrap(true);
  layout->addWidget(status_);
  // Searching as the user types, once they pause: one request per pause, not per key.
  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(400);
  connect(debounce_, &QTimer::timeout, this, &SearchPage::search);
  connect(query_, &QLineEdit::textEdited, debounce_, qOverload<>(&QTimer::start));
  connect(query_, &QLineEdit::returnPressed, this, &SearchPage::search);
  connect(button_, &QPushButton::clicked, this, &SearchPage::search);
  connect(results_, &QTreeWidget::currentItemChanged, this, &QWizardPage::completeChanged);
  connect(results_, &QTreeWidget::itemDoubleClicked, this, [this] {
    if (wizard()) wizard()->next();
  });
}

void SearchPage::search() {
  debounce_->stop();
  const QString text = query_->text().trimmed();
  if (text.isEmpty()) return;
  const int serial = ++serial_;
  status_->setText(tr("Searching for \u201c%1\u201d\u2026").arg(text));
  hub::SearchQuery q;
  q.text = text.toStdString();
  q.limit = 50;
  services_.hub.call<std::vector<hub::ModelSummary>>(
      this, "", [q](const hub::HubClient& c) { return c.search(q); },
      [this, serial](std::vector<hub::ModelSummary> found) {
        if (serial == serial_) showResults(found);
      },
      [this, serial](const HubFailure& f) {
        if (serial != serial_) return;
        results_->clear();
        status_->setText(tr("The search failed: %1").arg(f.message));
      });
}

void SearchPage::showResults(const std::vector<hub::ModelSummary>& found) {
  results_->clear();
  const QLocale locale;
  for (const auto& m : found) {
    auto* item = new QTreeWidgetItem(results_);
    item->setText(Model, QString::fromStdString(m.id));
    item->setText(Downloads, locale.toString(static_cast<qlonglong>(m.downloads)));
    item->setText(Likes, locale.toString(static_cast<qlonglong>(m.likes)));
    item->setText(Gated, m.gated == hub::Gated::No ? tr("no")
                                                   : tr("yes (%1)").arg(QString::fromLatin1(hub::to_string(m.gated))));
    item->setText(Architecture, architecture_cell(m));
    item->setTextAlignment(Downloads, Qt::AlignRight | Qt::AlignVCenter);
    item->setTextAlignment(Likes, Qt::AlignRight | Qt::AlignVCenter);
  }
  status_->setText(found.empty() ? tr("No text-generation model matches \u201c%1\u201d.").arg(query_->text().trimmed())
                                 : tr("%n model(s) found, most downloaded first.", "", static_cast<int>(found.size())));
  if (!found.empty()) results_->setCurrentItem(results_->topLevelItem(0));
  emit completeChanged();
}

bool SearchPage::isComplete() const { return results_->currentItem() != nullptr; }

bool SearchPage::validatePage() {
  const QString id = results_->currentItem() ? results_->currentItem()->text(Model) : QString();
  if (id.isEmpty()) return false;
  if (id != state_.repo_id) {  // another model: what was learnt about the previous one goes
    state_.repo_id = id;
    state_.overview.reset();
    state_.variant = -1;
  }
  return true;
}

}  // namespace inferdesk::gui
