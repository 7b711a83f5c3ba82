// The conversation view: a scrolling column of MessageWidgets that mirrors a ConversationModel
// row for row (reset, rows inserted / removed, data changed). While a reply streams it follows
// the end of the conversation, unless the user has scrolled up to read. Shows a placeholder
// when the chat is empty.
#pragma once

#include <QScrollArea>

#include <cstdint>

class QLabel;
class QVBoxLayout;

namespace inferdesk::gui {

class ConversationModel;
class MessageWidget;

class ConversationView : public QScrollArea {
  Q_OBJECT

 public:
  ConversationView(ConversationModel& model, QWidget* parent = nullptr);

  // A reply is being written in the shown chat: actions that change the tree wait.
  void setBusy(bool busy);
  void setPlaceholder(const QString& text);
  int messageCount() const;
  MessageWidget* messageAt(int row) const;
  MessageWidget* messageById(std::int64_t id) const;
  void scrollToEnd();

 signals:
  void editSubmitted(std::int64_t messageId, const QString& text);
  void regenerateRequested(std::int64_t messageId);
  void siblingRequested(std::int64_t messageId, int delta);

 private:
  void rebuild();
  void insertRows(int first, int last);
  void removeRows(int first, int last);
  void updateRows(int first, int last);
  void updateRow(int row);
  void updatePlaceholder();
  bool atEnd() const;

  ConversationModel& model_;
  QWidget* content_ = nullptr;
  QVBoxLayout* layout_ = nullptr;  // message widgets, then a stretch
  QLabel* placeholder_ = nullptr;
  bool busy_ = false;
  bool follow_ = true;
};

}  // namespace inferdesk::gui
