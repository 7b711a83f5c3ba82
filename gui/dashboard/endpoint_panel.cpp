#include "gui/dashboard/endpoint_panel.h"

#include <QComboBox>
#include <QDir>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "core/remote/key_file.h"
#include "core/store/store.h"
#include "gui/engine/engine_controller.h"

namespace inferdesk::gui {

using ProbeOutcome = std::pair<std::optional<remote::ProbeResult>, QString>;

EndpointPanel::EndpointPanel(AppContext& ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  auto* title = new QLabel(tr("<b>Endpoints</b>"), this);
  v->addWidget(title);
  list_ = new QListWidget(this);
  list_->setObjectName("endpointList");
  v->addWidget(list_, 1);
  auto* form = new QFormLayout();
  name_ = new QLineEdit(this);
  url_ = new QLineEdit(this);
  url_->setPlaceholderText("http://host:8000");
  kind_ = new QComboBox(this);
  kind_->addItems({"chat", "completions"});
  model_ = new QLineEdit(this);
  model_->setPlaceholderText(tr("first model listed"));
  key_ = new QLineEdit(this);
  key_->setEchoMode(QLineEdit::Password);
  key_->setPlaceholderText(tr("none"));
  flags_ = new QLineEdit(this);
  flags_->setPlaceholderText(tr("e.g. --max-num-seqs 256 (kept with results)"));
  form->addRow(tr("Name"), name_);
  form->addRow(tr("Base URL"), url_);
  form->addRow(tr("API"), kind_);
  form->addRow(tr("Model"), model_);
  form->addRow(tr("API key"), key_);
  form->addRow(tr("Engine flags"), flags_);
  v->addLayout(form);
  auto* row = new QHBoxLayout();
  save_ = new QPushButton(tr("Save"), this);
  remove_ = new QPushButton(tr("Remove"), this);
  test_ = new QPushButton(tr("Test connection"), this);
  test_->setObjectName("testConnection");
  row->addWidget(save_);
  row->addWidget(remove_);
  row->addWidget(test_);
  v->addLayout(row);
  probe_label_ = new QLabel(tr("Not tested yet."), this);
  probe_label_->setObjectName("probeResult");
  probe_label_->setWordWrap(true);
  v->addWidget(probe_label_);
  watcher_ = new QFutureWatcher<ProbeOutcome>(this);
  connect(watcher_, &QFutureWatcher<ProbeOutcome>::finished, this, &EndpointPanel::onProbed);
  connect(save_, &QPushButton::clicked, this, [this] { saveForm(); });
  connect(remove_, &QPushButton::clicked, this, [this] { removeSelected(); });
  connect(test_, &QPushButton::clicked, this, &EndpointPanel::testConnection);
  connect(list_, &QListWidget::currentRowChanged, this, &EndpointPanel::showSelected);
  if (ctx_.engine) {
    connect(ctx_.engine, &EngineController::modelLoaded, this, &EndpointPanel::reload);
    connect(ctx_.engine, &EngineController::modelUnloaded, this, &EndpointPanel::reload);
  }
  reload();
}

EndpointPanel::~EndpointPanel() { watcher_->waitForFinished(); }

QString EndpointPanel::keyPath() const { return QDir(ctx_.data_dir).filePath("endpoint-keys.json"); }

void EndpointPanel::reload() {
  const QString current = list_->currentItem() ? list_->currentItem()->text() : QString();
  QSignalBlocker block(list_);
  list_->clear();
  if (ctx_.engine && ctx_.engine->isLoaded()) list_->addItem(builtinName());
  try {
    for (const auto& e : store::EndpointStore(ctx_.db).list()) list_->addItem(QString::fromStdString(e.name));
  } catch (const std::exception& e) {
    emit errorMessage(tr("could not read the saved endpoints: %1").arg(e.what()));
  }
  const auto found = list_->findItems(current, Qt::MatchExactly);
  list_->setCurrentRow(found.isEmpty() ? (list_->count() ? 0 : -1) : list_->row(found.front()));
  showSelected();
}

bool EndpointPanel::selectByName(const QString& name) {
  const auto found = list_->findItems(name, Qt::MatchExactly);
  if (found.isEmpty()) return false;
  list_->setCurrentItem(found.front());
  return true;
}

bool EndpointPanel::builtinSelected() const {
  return list_->currentItem() && list_->currentItem()->text() == builtinName();
}

void EndpointPanel::setForm(const QString& name, const QString& url, const QString& model, const QString& key) {
  name_->setText(name);
  url_->setText(url);
  model_->setText(model);
  key_->setText(key);
}

void EndpointPanel::showSelected() {
  last_probe_.reset();
  const bool builtin = builtinSelected();
  for (QWidget* w : std::initializer_list<QWidget*>{name_, url_, kind_, model_, key_, save_, remove_, test_})
    w->setEnabled(!builtin);
  if (builtin) {
    const auto m = ctx_.engine->loadedModel();
    setForm(builtinName(), tr("(served on localhost when a run starts)"), m ? m->name : QString());
    probe_label_->setText(tr("The model loaded in this app, measured through its own OpenAI-compatible server."));
    return;
  }
  if (!list_->currentItem()) return;
  try {
    const auto row = store::EndpointStore(ctx_.db).find(list_->currentItem()->text().toStdString());
    if (!row) return;
    setForm(QString::fromStdString(row->name), QString::fromStdString(row->base_url),
            QString::fromStdString(row->model),
            QString::fromStdString(remote::KeyFile(keyPath().toStdString()).get(row->name)));
    kind_->setCurrentText(QString::fromStdString(row->kind));
    probe_label_->setText(row->engine.empty() ? tr("Not tested yet.")
                                              : tr("Last detected: %1").arg(QString::fromStdString(row->engine)));
  } catch (const std::exception& e) {
    emit errorMessage(tr("could not read the endpoint: %1").arg(e.what()));
  }
}

bool EndpointPanel::saveForm() {
  const QString name = name_->text().trimmed();
  if (name.isEmpty() || url_->text().trimmed().isEmpty() || name == builtinName()) {
    emit errorMessage(tr("An endpoint needs a name (not the built-in one) and a base URL."));
    return false;
  }
  try {
    store::EndpointRow row{0, name.toStdString(), remote::normalized_base_url(url_->text().trimmed().toStdString()),
                           kind_->currentText().toStdString(), model_->text().trimmed().toStdString(),
                           last_probe_ ? remote::display_name(last_probe_->detection.engine) : "", 0};
    store::EndpointStore(ctx_.db).save(row);
    remote::KeyFile(keyPath().toStdString()).set(row.name, key_->text().toStdString());
  } catch (const std::exception& e) {
    emit errorMessage(tr("could not save the endpoint: %1").arg(e.what()));
    return false;
  }
  const auto probe = last_probe_;
  reload();
  selectByName(name);
  last_probe_ = probe;
  return true;
}

bool EndpointPanel::removeSelected() {
  if (!list_->currentItem() || builtinSelected()) return false;
  try {
    const std::string name = list_->currentItem()->text().toStdString();
    if (const auto row = store::EndpointStore(ctx_.db).find(name)) store::EndpointStore(ctx_.db).remove(row->id);
    remote::KeyFile(keyPath().toStdString()).set(name, "");
  } catch (const std::exception& e) {
    emit errorMessage(tr("could not remove the endpoint: %1").arg(e.what()));
    return false;
  }
  reload();
  return true;
}

bool EndpointPanel::probing() const { return watcher_->isRunning(); }

void EndpointPanel::testConnection() {
  if (probing()) return;
  remote::Endpoint ep{name_->text().toStdString(), url_->text().trimmed().toStdString(), key_->text().toStdString(),
                      remote::parse_api_kind(kind_->currentText().toStdString()), model_->text().toStdString()};
  probe_label_->setText(tr("Testing %1\u2026").arg(url_->text()));
  test_->setEnabled(false);
  watcher_->setFuture(QtConcurrent::run([ep]() -> ProbeOutcome {
    try {
      return {remote::probe_endpoint(ep), QString()};
    } catch (const std::exception& e) {
      return {std::nullopt, QString::fromUtf8(e.what())};
    }
  }));
}

void EndpointPanel::onProbed() {
  test_->setEnabled(!builtinSelected());
  const ProbeOutcome out = watcher_->result();
  last_probe_ = out.first;
  if (!out.first) {
    probe_label_->setText(tr("<b>Not reachable:</b> %1").arg(out.second.toHtmlEscaped()));
    emit probed(false);
    return;
  }
  const auto& r = *out.first;
  QStringList models;
  for (const auto& m : r.models) models << QString::fromStdString(m);
  if (model_->text().isEmpty() && !models.isEmpty()) model_->setText(models.front());
  const QString version = r.detection.version.empty() ? QString() : " " + QString::fromStdString(r.detection.version);
  probe_label_->setText(tr("<b>%1%2</b> — %3<br>Models: %4")
                            .arg(remote::display_name(r.detection.engine), version.toHtmlEscaped(),
                                 QString::fromStdString(r.detection.reason).toHtmlEscaped(),
                                 models.join(", ").toHtmlEscaped()));
  emit probed(true);
}

RunTarget EndpointPanel::currentTarget() const {
  RunTarget t;
  t.name = name_->text().toStdString();
  t.base_url = remote::normalized_base_url(url_->text().trimmed().toStdString());
  t.api_key = key_->text().toStdString();
  t.model = model_->text().trimmed().toStdString();
  t.engine_flags = flags_->text().toStdString();
  if (last_probe_) {
    t.engine = remote::display_name(last_probe_->detection.engine);
    t.engine_version = last_probe_->detection.version;
    if (t.model.empty() && !last_probe_->models.empty()) t.model = last_probe_->models.front();
  }
  return t;
}

}  // namespace inferdesk::gui
