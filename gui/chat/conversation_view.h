// The conversation view: a scrolling column of MessageWidgets that mirrors a ConversationModel
// row for row (reset, rows inserted / removed, data changed). While a reply streams it follows
// the end of the conversation, unless the user has scrolled up to read. Shows a placeholder
// (rich text; its links are re-emitted as linkActivated) when the chat is empty.
//
// Long chats: a reset builds the last kInitialRows messages (what the user sees); older ones are
// built a slice at a time (at most kSliceRows, about kSliceMs) only as the user scrolls towards
// the top, on later turns of the event loop, and the view keeps its place as they appear. So
// opening a chat of hundreds of messages never blocks the UI, and a resize or a theme switch
// lays out only the messages the user has looked at. Rows not built have no widget (messageAt
// returns null); buildAll() builds them all. Each slice lives in a container of its own, so a
// slice added above moves one widget per slice, not every message below it.
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
  static constexpr int kInitialRows = 16;
  static constexpr int kSliceRows = 12;
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
  int firstBuiltRow() const { return first_built_; }
  // Builds the older rows now, slice by slice with the event loop turning in between (tests).
  void buildAll();
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
  void maybeBuildOlder();  // near the top with rows left: one more slice, later
  MessageWidget* makeWidget(QWidget* parent);
  // Puts a new widget for model row `row` (first_built_ <= row <= first_built_ + count) in place.
  void placeWidget(int row);
  QWidget* newChunk(int layoutIndex);
  void insertRows(int first, int last);
  void removeRows(int first, int last);
  void updateRows(int first, int last);
  void updateRow(int row);
  void updatePlaceholder();
  bool atEnd() const;

  ConversationModel& model_;
  QWidget* content_ = nullptr;
  QVBoxLayout* layout_ = nullptr;  // placeholder, chunks (oldest first), stretch
  QList<MessageWidget*> widgets_;  // rows first_built_.. in order
  QLabel* placeholder_ = nullptr;
  QTimer* slices_ = nullptr;
  int first_built_ = 0;         // model rows below this have no widget yet
  int last_max_ = 0;            // the scroll bar's maximum before the latest range change
  bool growing_above_ = false;  // older rows were just inserted above what the user sees
  int growth_generation_ = 0;   // the latest slice (an older slice's timer must not clear the flag)
  bool busy_ = false;
  bool follow_ = true;
};

}  // namespace inferdesk::gui
