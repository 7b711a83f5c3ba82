#include "gui/hub/wizard/model_page.h"

#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "gui/hub/hub_widgets.h"
#include "gui/hub/token_dialog.h"
#include "gui/hub/token_vault.h"
#include "gui/models/model_facts.h"

namespace inferdesk::gui {

namespace {

QString row(const QString& name, const QString& value) {
  return QStringLiteral("<tr><td><b>%1</b></td><td>&nbsp;&nbsp;%2</td></tr>").arg(name.toHtmlEscaped(), value);
}

QString gated_text(const RepoOverview& o, const QString& model_page) {
  if (o.info.gated == hub::Gated::No) return QObject::tr("no");
  return QObject::tr("yes (%1 approval): request access at <a href=\"%2\">%2</a>")
      .arg(o.info.gated == hub::Gated::Auto ? QObject::tr("automatic") : QObject::tr("manual"),
           model_page.toHtmlEscaped());
}

QString escaped_lines(const QStringList& lines) {
  QStringList out;
  for (const QString& l : lines) out << l.toHtmlEscaped();
  return out.join("<br>");
}

QString variants_text(const RepoOverview& o) {
  QStringList items;
  for (const RepoVariant& v : o.variants) {
    QString line = QStringLiteral("%1 — %2").arg(v.label.toHtmlEscaped(), format_bytes(v.file_bytes));
    line += v.runnable ? QObject::tr(" (InferDesk runs it)") : QObject::tr(" (not runnable here)");
    if (!v.note.isEmpty()) line += QStringLiteral("<br><small>%1</small>").arg(v.note.toHtmlEscaped());
    items << line;
  }
  return items.isEmpty() ? QObject::tr("no safetensors weights") : items.join("<br>");
}

}  // namespace

ModelPage::ModelPage(WizardServices& services, WizardState& state) : services_(services), state_(state) {
  setObjectName("modelPage");
  setTitle(tr("The model"));
  auto* layout = new QVBoxLayout(this);
  facts_ = make_link_label("modelFacts");
  layout->addWidget(facts_);
  summary_ = new QLabel();
  summary_->setObjectName("readmeSummary");
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  problem_ = make_link_label("modelProblem");
  layout->addWidget(problem_);
  token_ = new QPushButton(tr("Enter token\u2026"));
  token_->setObjectName("modelTokenButton");
  token_->hide();
  layout->addWidget(token_, 0, Qt::AlignLeft);
  layout->addStretch(1);
  connect(token_, &QPushButton::clicked, this, [this] { enterToken(problem_->text()); });
  // A token saved anywhere may open this repository: ask again.
  connect(&services_.hub, &HubService::tokenChanged, this, [this] {
    if (isVisible() && !state_.repo_id.isEmpty()) fetch();
  });
}

void ModelPage::initializePage() {
  setSubTitle(state_.repo_id);
  if (state_.overview && state_.overview->repo_id == state_.repo_id.toStdString())
    show();
  else
    fetch();
}

void ModelPage::fetch() {
  const int serial = ++serial_;
  loading_ = true;
  state_.overview.reset();
  facts_->setText(tr("Reading %1 from the Hub\u2026").arg(state_.repo_id.toHtmlEscaped()));
  summary_->clear();
  problem_->clear();
  token_->hide();
  emit completeChanged();
  const std::string repo = state_.repo_id.toStdString();
  services_.hub.call<RepoOverview>(
      this, repo, [repo](const hub::HubClient& c) { return fetch_repo_overview(c, repo); },
      [this, serial](RepoOverview o) {
        if (serial != serial_) return;
        loading_ = false;
        state_.overview = std::move(o);
        show();
      },
      [this, serial](const HubFailure& f) {
        if (serial != serial_) return;
        loading_ = false;
        showFailure(f);
      });
}

void ModelPage::show() {
  const RepoOverview& o = *state_.overview;
  QString arch = o.architecture.isEmpty() ? o.model_type : QStringLiteral("%1 (%2)").arg(o.architecture, o.model_type);
  arch = arch.toHtmlEscaped() + " — " + o.support_note.toHtmlEscaped();
  const QString page = services_.hub.endpoint() + "/" + state_.repo_id;
  QString html = "<table>";
  html += row(tr("License"),
              o.info.license.empty() ? tr("not stated") : QString::fromStdString(o.info.license).toHtmlEscaped());
  html += row(tr("Gated"), gated_text(o, page));
  html += row(tr("Architecture"), arch);
  html += row(tr("Parameters"), o.params > 0 ? format_count(o.params) : tr("unknown"));
  html += row(tr("Download"),
              tr("%1 in %2 files").arg(format_bytes(o.download_bytes)).arg(o.files.size() - o.skipped.size()));
  if (!o.skipped.isEmpty()) html += row(tr("Not downloaded"), escaped_lines(o.skipped));
  html += row(tr("Variants"), variants_text(o));
  html += "</table>";
  facts_->setText(html);
  summary_->setText(o.readme_summary.isEmpty() ? tr("The README has no summary.") : o.readme_summary);
  QString problem;
  if (o.access_error) {
    HubFailure f;
    f.message = QString::fromUtf8(o.access_error->what());
    f.kind = o.access_error->kind();
    f.model_page = page;
    problem = f.html();
    token_->show();
  } else if (const RepoVariant* root = o.rootVariant(); !root || !root->runnable) {
    problem = root ? root->note.toHtmlEscaped() : tr("The repository has no safetensors weights InferDesk can load.");
  }
  problem_->setText(problem);
  emit completeChanged();
}

void ModelPage::showFailure(const HubFailure& f) {
  facts_->setText(tr("Could not read %1 from the Hub.").arg(state_.repo_id.toHtmlEscaped()));
  problem_->setText(f.html());
  token_->setVisible(f.needsToken());
  emit completeChanged();
}

void ModelPage::enterToken(const QString& context) {
  TokenDialog::openFor(services_.vault, services_.hub.endpoint(), context, this);
}

bool ModelPage::isComplete() const {
  if (loading_ || !state_.overview || state_.overview->access_error) return false;
  const RepoVariant* root = state_.overview->rootVariant();
  return root && root->runnable;
}

}  // namespace inferdesk::gui
