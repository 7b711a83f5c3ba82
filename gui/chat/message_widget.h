// One message of the conversation view: who wrote it, "‹ 2/3 ›" when it has siblings, actions
// (copy, which says "Copied" for a moment; edit for the user's messages, which opens an inline
// editor; regenerate for replies), the markdown body (the user's own line breaks kept), and under
// a reply its statistics (tokens, tokens/s, time to first token, finish reason) or that it is
// still being written; a reply that ended in an error says so. The widget only shows and asks: the conversation
// view connects its signals to the chat session.
#pragma once

#include <QFrame>

#include <cstdint>

#include "gui/chat/conversation_model.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QToolButton;
class QWidget;

namespace inferdesk::gui {

class MarkdownBody;

class MessageWidget : public QFrame {
  Q_OBJECT

 public:
  explicit MessageWidget(QWidget* parent = nullptr);

  // Shows `row`; inContext false greys it and says the last prompt left it out. `busy`: a reply
  // is being written in this chat (edit / regenerate / branch switching wait for it).
  void setRow(const ConversationModel::Row& row, const QString& statsText, bool inContext, bool busy);
  void setBusy(bool busy);
  std::int64_t messageId() const { return id_; }
  bool isEditing() const { return editing_; }

  // For tests: the parts a user clicks.
  QToolButton* copyButton() const { return copy_; }
  QToolButton* editButton() const { return edit_; }
  QToolButton* regenerateButton() const { return regenerate_; }
  QToolButton* previousButton() const { return prev_; }
  QToolButton* nextButton() const { return next_; }
  QLabel* siblingLabel() const { return sibling_label_; }
  QPlainTextEdit* editor() const { return editor_; }
  QPushButton* editSendButton() const { return edit_send_; }
  QLabel* statsLabel() const { return stats_; }
  MarkdownBody* body() const { return body_; }

 signals:
  void editSubmitted(std::int64_t messageId, const QString& text);
  void regenerateRequested(std::int64_t messageId);
  void siblingRequested(std::int64_t messageId, int delta);
  void copied(std::int64_t messageId);

 public slots:
  void startEditing();
  void cancelEditing();

 protected:
  void changeEvent(QEvent* event) override;      // a new palette: the greyed body follows it
  void paintEvent(QPaintEvent* event) override;  // the rounded frame, in the current palette

 public:
  // The frame's fill (for tests): the surroundings' base, tinted for the user's messages.
  QColor backgroundColor() const;

 private:
 private:
  void buildUi();
  void updateButtons();
  void applyRoleStyle();
  void showCopied();

  std::int64_t id_ = 0;
  QString role_;
  QString content_;
  QString status_;
  int sibling_index_ = 0;
  int sibling_count_ = 1;
  bool busy_ = false;
  bool editing_ = false;
  bool in_context_ = true;

  QLabel* author_ = nullptr;
  QToolButton* prev_ = nullptr;
  QLabel* sibling_label_ = nullptr;
  QToolButton* next_ = nullptr;
  QToolButton* copy_ = nullptr;
  QToolButton* edit_ = nullptr;
  QToolButton* regenerate_ = nullptr;
  MarkdownBody* body_ = nullptr;
  QLabel* context_note_ = nullptr;
  QLabel* stats_ = nullptr;
  QWidget* edit_box_ = nullptr;
  QPlainTextEdit* editor_ = nullptr;
  QPushButton* edit_send_ = nullptr;
  QPushButton* edit_cancel_ = nullptr;
};

}  // namespace inferdesk::gui
