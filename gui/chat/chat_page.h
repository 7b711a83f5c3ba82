// The chat page: the chat list (new, rename, delete with confirmation, search) on the left, the
// conversation with its composer in the middle, and the chat's system prompt and sampling
// settings (with named presets) on the right; a header with the loaded model, "Prompt" (the chat
// template's output for this conversation) and "Export" (JSON with every branch, Markdown).
// The logic lives in ChatSession, ChatListModel, ConversationModel and ChatTransfer; this class
// wires them to widgets and offers its commands as QActions (actions()) with the shortcuts the
// main window's menus list.
//
// Settings typed in the side panel are saved to the chat shortly after the last change (and at
// once before a message is sent or another chat is shown); without a chat they wait for the
// chat the first message creates. Messages sent while a reply streams wait in a queue shown above
// the composer (ChatSession::sendOrQueue). No text sets the page's minimum width: titles and
// model names are elided, messages wrap.
#pragma once

#include <QWidget>

#include <cstdint>
#include <functional>

#include "gui/app/app_context.h"
#include "gui/chat/chat_transfer.h"
#include "gui/engine/engine_controller.h"

class QAction;
class QLabel;
class QLineEdit;
class QListView;
class QPlainTextEdit;
class QPushButton;
class QSplitter;
class QTimer;
class QToolButton;

namespace inferdesk::gui {

class ChatListModel;
class ChatSession;
class ProviderPicker;
class ConversationModel;
class ConversationView;
class ElidedLabel;
class PendingView;
class SamplingPanel;

class ChatPage : public QWidget {
  Q_OBJECT

 public:
  using ExportFormat = gui::ExportFormat;

  // The page's commands, for the main window's menus (each with its shortcut).
  struct Actions {
    QAction* newChat = nullptr;        // Ctrl+N
    QAction* importChat = nullptr;     // Ctrl+O
    QAction* exportChat = nullptr;     // Ctrl+E
    QAction* find = nullptr;           // Ctrl+F: the search box
    QAction* focusComposer = nullptr;  // Ctrl+L
    QAction* deleteChat = nullptr;     // Delete, in the chat list (asks first)
    QAction* stop = nullptr;           // Esc, while a reply is written
    QAction* regenerate = nullptr;     // Ctrl+Shift+R
  };

  ChatPage(AppContext& ctx, QWidget* parent = nullptr);
  ~ChatPage() override;

  std::int64_t currentChatId() const;
  // Shows a chat (selects its row); false when it is not in the list.
  bool selectChat(std::int64_t chatId);
  // Creates an empty chat and shows it; returns its id (0 on failure).
  std::int64_t newChat();
  // Deletes a chat after asking (a window-modal QMessageBox naming it; `ask` false deletes at once).
  void deleteChat(std::int64_t chatId, bool ask = true);
  // Writes the shown chat; false with *error when it could not.
  bool exportChat(const QString& path, ExportFormat format, QString* error = nullptr);
  // Imports a chat export and shows it; false with *error.
  bool importChat(const QString& path, QString* error = nullptr);
  // The text the "Prompt" dialog shows (the rendered prompt, or why there is none).
  QString renderedPromptReport() const;
  // A notice with an action link ("Load tiny-chat again? Load · Not now").
  void offer(const QString& text, const QString& actionText, std::function<void()> action);

  const Actions& actions() const { return actions_; }

  // Parts of the page, for tests and the main window.
  ChatListModel* chatList() const { return list_model_; }
  ConversationModel* conversation() const { return conversation_; }
  ChatSession* session() const { return session_; }
  ProviderPicker* providerPicker() const { return provider_; }
  ConversationView* conversationView() const { return view_; }
  SamplingPanel* samplingPanel() const { return sampling_; }
  PendingView* pendingView() const { return pending_; }
  QListView* chatListView() const { return list_view_; }
  QLineEdit* searchBox() const { return search_; }
  QPlainTextEdit* composer() const { return composer_; }
  QPlainTextEdit* systemPromptEdit() const { return system_prompt_; }
  QPushButton* sendButton() const { return send_; }
  QPushButton* stopButton() const { return stop_; }
  QLabel* noticeLabel() const { return notice_; }
  ElidedLabel* titleLabel() const { return title_; }
  ElidedLabel* modelLabel() const { return model_label_; }
  QSplitter* splitter() const { return splitter_; }

 signals:
  // "Load a model first": the user followed the link to the Models page.
  void modelsPageRequested();

 public slots:
  // What the Send button does: sends the composer's text (creating a chat when none is shown), or
  // queues it while a reply streams; with an empty composer it resumes a paused queue.
  void sendComposerText();
  void stopReply();
  void regenerateLast();
  void focusSearch();
  void focusComposer();
  void showRenderedPrompt();
  void exportWithDialog(inferdesk::gui::ChatPage::ExportFormat format = ExportFormat::Json);
  void importWithDialog();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void buildUi();
  QWidget* buildListPanel();
  QWidget* buildConversationPanel();
  QWidget* buildSettingsPanel();
  void buildActions();
  void connectSignals();
  void connectSession();
  void onChatSelected(std::int64_t chatId);
  void loadChatSettings(std::int64_t chatId);
  void scheduleSettingsSave();
  void saveChatSettings();
  void showNotice(const QString& html, bool error, const QString& dismissText = "Dismiss");
  void clearNotice();
  void showLoadModelFirst();
  void goToModels();
  void updateModelLabel();
  void updateButtons();
  void updatePending();
  void updateTitle();
  void renameSelected();
  void restoreSplitter();
  void saveSplitter();

  AppContext& ctx_;
  ChatListModel* list_model_ = nullptr;
  ConversationModel* conversation_ = nullptr;
  ChatSession* session_ = nullptr;
  ProviderPicker* provider_ = nullptr;
  ChatTransfer* transfer_ = nullptr;
  Actions actions_;

  QSplitter* splitter_ = nullptr;
  QListView* list_view_ = nullptr;
  QLineEdit* search_ = nullptr;
  QPushButton* new_ = nullptr;
  QPushButton* rename_ = nullptr;
  QPushButton* delete_ = nullptr;
  ElidedLabel* title_ = nullptr;
  ElidedLabel* model_label_ = nullptr;
  QLabel* load_link_ = nullptr;
  QPushButton* prompt_ = nullptr;
  QToolButton* export_ = nullptr;
  QLabel* notice_ = nullptr;
  bool notice_error_ = false;
  std::function<void()> offered_;
  ConversationView* view_ = nullptr;
  PendingView* pending_ = nullptr;
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
