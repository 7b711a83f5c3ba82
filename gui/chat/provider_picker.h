// ProviderPicker: the chat header's "who answers" choice — the embedded engine or any endpoint
// saved on the Dashboard page (store::EndpointStore, API keys from the key file beside the
// database). Choosing one hands ChatSession a ReplyProvider; the list is re-read each time it
// opens, so endpoints added on the Dashboard appear without a restart.
#pragma once

#include <QComboBox>
#include <QPointer>

#include "gui/app/app_context.h"

namespace inferdesk::gui {

class ChatSession;
class RemoteProvider;

class ProviderPicker : public QComboBox {
  Q_OBJECT

 public:
  ProviderPicker(AppContext& ctx, ChatSession& session, QWidget* parent = nullptr);
  ~ProviderPicker() override;
  // Re-reads the saved endpoints, keeping the current choice when it still exists.
  void refresh();
  // Chooses a saved endpoint by name ("" : the embedded engine); false when there is none.
  bool choose(const QString& endpointName);

  void showPopup() override;
  // The chosen remote endpoint's provider (null: the embedded engine).
  const RemoteProvider* remote() const { return remote_; }

 signals:
  void errorMessage(const QString& text);
  void providerChanged();  // after every choice, so the header can show who answers

 private:
  void apply(int index);
  AppContext& ctx_;
  QPointer<ChatSession> session_;  // the page may destroy it first
  RemoteProvider* remote_ = nullptr;  // owned; replaced when the choice changes
};

}  // namespace inferdesk::gui
