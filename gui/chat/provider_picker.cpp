#include "gui/chat/provider_picker.h"

#include <QDir>

#include "core/remote/key_file.h"
#include "core/store/store.h"
#include "gui/chat/chat_session.h"
#include "gui/chat/reply_provider.h"

namespace inferdesk::gui {

ProviderPicker::ProviderPicker(AppContext& ctx, ChatSession& session, QWidget* parent)
    : QComboBox(parent), ctx_(ctx), session_(&session) {
  setObjectName("chatProvider");
  setToolTip(tr("Who writes the replies: the embedded engine or an endpoint saved on the Dashboard page"));
  setSizeAdjustPolicy(QComboBox::AdjustToContents);
  refresh();
  connect(this, &QComboBox::activated, this, &ProviderPicker::apply);
}

ProviderPicker::~ProviderPicker() {
  if (session_) session_->setProvider(nullptr);
}

void ProviderPicker::showPopup() {
  refresh();
  QComboBox::showPopup();
}

void ProviderPicker::refresh() {
  const QString current = currentData().toString();
  QSignalBlocker block(this);
  clear();
  addItem(tr("Embedded engine"), QString());
  try {
    for (const auto& e : store::EndpointStore(ctx_.db).list()) {
      const QString name = QString::fromStdString(e.name);
      addItem(e.engine.empty() ? name : QString("%1 (%2)").arg(name, QString::fromStdString(e.engine)), name);
    }
  } catch (const std::exception& e) {
    emit errorMessage(tr("could not read the saved endpoints: %1").arg(e.what()));
  }
  const int i = findData(current);
  setCurrentIndex(i < 0 ? 0 : i);
  if (i < 0 && !current.isEmpty()) apply(0);  // the endpoint was removed
}

bool ProviderPicker::choose(const QString& endpointName) {
  refresh();
  const int i = findData(endpointName);
  if (i < 0) return false;
  setCurrentIndex(i);
  apply(i);
  return true;
}

void ProviderPicker::apply(int index) {
  const QString name = itemData(index).toString();
  RemoteProvider* old = remote_;
  remote_ = nullptr;
  if (!name.isEmpty()) {
    try {
      const auto row = store::EndpointStore(ctx_.db).find(name.toStdString());
      if (!row) throw std::runtime_error("it was removed");
      remote::Endpoint ep{row->name, row->base_url, {}, remote::parse_api_kind(row->kind), row->model};
      ep.api_key = remote::KeyFile(QDir(ctx_.data_dir).filePath("endpoint-keys.json").toStdString()).get(row->name);
      remote_ = new RemoteProvider(std::move(ep), this);
    } catch (const std::exception& e) {
      emit errorMessage(tr("could not use the endpoint %1: %2").arg(name, e.what()));
      setCurrentIndex(0);
    }
  }
  if (!session_) return;
  session_->setProvider(remote_);
  emit providerChanged();
  // Replies still streaming from the old provider keep it until they end.
  if (old) {
    if (session_->isGenerating()) {
      ChatSession* s = session_;
      connect(s, &ChatSession::generatingChanged, old, [old, s](std::int64_t, bool on) {
        if (!on && !s->isGenerating()) old->deleteLater();
      });
    } else {
      delete old;
    }
  }
}

}  // namespace inferdesk::gui
