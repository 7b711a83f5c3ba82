// Messages waiting to be sent (ChatSession's queue for the shown chat), above the composer: one
// line per message with a button that removes it, and a line saying when they go out ("sent one
// by one when the reply ends", or "paused: press Send to send them"). Hidden when nothing waits.
#pragma once

#include <QFrame>
#include <QStringList>

class QLabel;
class QToolButton;
class QVBoxLayout;

namespace inferdesk::gui {

class PendingView : public QFrame {
  Q_OBJECT

 public:
  explicit PendingView(QWidget* parent = nullptr);

  void setMessages(const QStringList& texts, bool paused);
  int count() const { return texts_.size(); }
  QString textAt(int index) const { return texts_.value(index); }
  QToolButton* removeButton(int index) const;
  QLabel* statusLabel() const { return status_; }

 signals:
  void removeRequested(int index);

 private:
  QStringList texts_;
  QLabel* status_ = nullptr;
  QVBoxLayout* rows_ = nullptr;
  QList<QToolButton*> buttons_;
};

}  // namespace inferdesk::gui
