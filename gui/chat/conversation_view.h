// The conversation view: a scrolling column of MessageWidgets that mirrors a ConversationModel
// row for row (reset, rows inserted / removed, data changed). While a reply streams it follows
// the end of the conversation, unless the user has scrolled up to read. Shows a placeholder
// (rich text; its links are re-emitted as linkActivated) when the chat is empty.
//
// Long chats: a reset builds the last kInitialRows messages at once (what the user sees) and the
// older ones in slices of about kSliceMs on later turns of the event loop, newest first, so
// opening a chat of hundreds of messages never blocks the UI; the view keeps its place meanwhile.
// Rows not built yet have no widget (messageAt returns null).
#pragma once

#include <QScrollArea>

#include <cstdint>

class QLabel;
class QTimer;
class QVBoxLayout;

namespace inferdesk::gui {

class ConversationModel;
class MessageWidget;

class ConversationView : public QScrollArea {
  Q_OBJECT

 public:
  static constexpr int kInitialRows = 24;
  static constexpr int kSliceMs = 8;

  ConversationView(ConversationModel& model, QWidget* parent = nullptr);

  // A reply is being written in the shown chat: actions that change the tree wait.
  void setBusy(bool busy);
  void setPlaceholder(const QString& text);
  QString placeholderText() const;
  bool placeholderVisible() const;
  // Widgets built so far (all rows once isComplete()).
  int messageCount() const;
  bool isComplete() const { return first_built_ == 0; }
  // The widget of model row `row` (null while it is not built yet).
  MessageWidget* messageAt(int row) const;
  MessageWidget* messageById(std::int64_t id) const;
  void scrollToEnd();

 signals:
  void editSubmitted(std::int64_t messageId, const QString& text);
  void regenerateRequested(std::int64_t messageId);
  void siblingRequested(std::int64_t messageId, int delta);
  void linkActivated(const QString& link);

 protected:
  void changeEvent(QEvent* event) override;  // the placeholder's link follows the palette

 private:
  void rebuild();
  void buildOlderSlice();
  MessageWidget* makeWidget();
  void insertRows(int first, int last);
  void removeRows(int first, int last);
  void updateRows(int first, int last);
  void updateRow(int row);
  void updatePlaceholder();
  bool atEnd() const;

  ConversationModel& model_;
  QWidget* content_ = nullptr;
  QVBoxLayout* layout_ = nullptr;  // placeholder, message widgets of rows first_built_.., stretch
  QLabel* placeholder_ = nullptr;
  QTimer* slices_ = nullptr;
  int first_built_ = 0;  // model rows below this have no widget yet
  int last_max_ = 0;     // the scroll bar's maximum before the latest range change
  bool growing_above_ = false;  // older rows were just inserted above what the user sees
  bool busy_ = false;
  bool follow_ = true;
};

}  // namespace inferdesk::gui
