// The chat page: the chat list (new, rename, delete with confirmation, search) on the left, the
// conversation with its composer in the middle, and the chat's system prompt and sampling
// settings (with named presets) on the right; a header with the loaded model, "Prompt" (the chat
// template's output for this conversation) and "Export" (Markdown or JSON). The logic lives in
// ChatSession, ChatListModel and ConversationModel; this class wires them to widgets.
//
// Settings typed in the side panel are saved to the chat shortly after the last change (and at
// once before a message is sent or another chat is shown); without a chat they wait for the
// chat the first message creates.
#pragma once

#include <QWidget>

#include <cstdint>

#include "gui/app/app_context.h"
#include "gui/engine/engine_controller.h"

class QLabel;
class QLineEdit;
class QListView;
class QPlainTextEdit;
class QPushButton;
class QTimer;
class QToolButton;

namespace inferdesk::gui {

class ChatListModel;
class ChatSession;
class ConversationModel;
class ConversationView;
class SamplingPanel;

class ChatPage : public QWidget {
  Q_OBJECT

 public:
  enum class ExportFormat { Markdown, Json };

  ChatPage(AppContext& ctx, QWidget* parent = nullptr);
  ~ChatPage() override;

  std::int64_t currentChatId() const;
  // Shows a chat (selects its row); false when it is not in the list.
  bool selectChat(std::int64_t chatId);
  // Creates an empty chat and shows it; returns its id (0 on failure).
  std::int64_t newChat();
  // Deletes a chat after asking (a window-modal QMessageBox; `ask` false deletes at once).
  void deleteChat(std::int64_t chatId, bool ask = true);
  // Writes the shown chat's current branch; false with *error when it could not.
  bool exportChat(const QString& path, ExportFormat format, QString* error = nullptr);
  // The text the "Prompt" dialog shows (the rendered prompt, or why there is none).
  QString renderedPromptReport() const;

  // Parts of the page, for tests and the main window.
  ChatListModel* chatList() const { return list_model_; }
  ConversationModel* conversation() const { return conversation_; }
  ChatSession* session() const { return session_; }
  ConversationView* conversationView() const { return view_; }
  SamplingPanel* samplingPanel() const { return sampling_; }
  QListView* chatListView() const { return list_view_; }
  QLineEdit* searchBox() const { return search_; }
  QPlainTextEdit* composer() const { return composer_; }
  QPlainTextEdit* systemPromptEdit() const { return system_prompt_; }
  QPushButton* sendButton() const { return send_; }
  QPushButton* stopButton() const { return stop_; }
  QLabel* noticeLabel() const { return notice_; }
  QLabel* modelLabel() const { return model_label_; }

 signals:
  // "Load a model first": the user followed the link to the Models page.
  void modelsPageRequested();

 public slots:
  // What the Send button does: sends the composer's text (creating a chat when none is shown).
  void sendComposerText();
  void stopReply();
  void showRenderedPrompt();
  void exportWithDialog(inferdesk::gui::ChatPage::ExportFormat format);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void buildUi();
  QWidget* buildListPanel();
  QWidget* buildConversationPanel();
  QWidget* buildSettingsPanel();
  void connectSignals();
  void onChatSelected(std::int64_t chatId);
  void loadChatSettings(std::int64_t chatId);
  void scheduleSettingsSave();
  void saveChatSettings();
  void showNotice(const QString& html, bool error);
  void clearNotice();
  void showLoadModelFirst();
  void updateModelLabel();
  void updateButtons();
  void renameSelected();

  AppContext& ctx_;
  ChatListModel* list_model_ = nullptr;
  ConversationModel* conversation_ = nullptr;
  ChatSession* session_ = nullptr;

  QListView* list_view_ = nullptr;
  QLineEdit* search_ = nullptr;
  QPushButton* new_ = nullptr;
  QPushButton* rename_ = nullptr;
  QPushButton* delete_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* model_label_ = nullptr;
  QPushButton* prompt_ = nullptr;
  QToolButton* export_ = nullptr;
  QLabel* notice_ = nullptr;
  ConversationView* view_ = nullptr;
  QPlainTextEdit* composer_ = nullptr;
  QPushButton* send_ = nullptr;
  QPushButton* stop_ = nullptr;
  QPlainTextEdit* system_prompt_ = nullptr;
  SamplingPanel* sampling_ = nullptr;
  QLabel* settings_note_ = nullptr;
  QTimer* save_timer_ = nullptr;
  std::int64_t settings_chat_ = 0;  // the chat the side panel's values belong to (0: none yet)
  bool loading_settings_ = false;
};

}  // namespace inferdesk::gui
