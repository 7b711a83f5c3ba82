// ReplyWriter: saves streamed replies without making the UI thread wait for the disk. Each batch
// of a reply is committed (durable: WAL + synchronous=FULL, so an fsync) by a worker thread
// with its own connection to the same database file, in the order the batches arrived; a crash
// loses at most the batches still queued (normally the last one). The UI shows the text from
// memory meanwhile (ConversationModel's live text) and re-reads a reply from the store only after
// finished() says its end is committed.
//
// Everything else (user messages, chats, settings) is still written on the UI thread, before it
// is shown; only the high-rate appends and the stream's end go through here.
#pragma once

#include <QObject>
#include <QString>

#include <cstdint>
#include <filesystem>

#include "core/store/store.h"

class QThread;

namespace inferdesk::gui {

class ReplyWriter : public QObject {
  Q_OBJECT

 public:
  // Starts the worker thread; the connection is opened there on first use.
  explicit ReplyWriter(std::filesystem::path databasePath, QObject* parent = nullptr);
  // Commits everything queued, then stops the thread.
  ~ReplyWriter() override;

  // Queued in call order; never wait for the disk.
  void append(std::int64_t messageId, const QString& text);
  void finish(std::int64_t messageId, store::MessageStatus status, const QString& statsJson);
  // Waits until everything queued so far is committed (or has failed).
  void flush();

 signals:
  // The end of the reply is committed (delivered on the thread that owns the writer).
  void finished(std::int64_t messageId);
  // A write failed; later appends of this message are dropped.
  void failed(std::int64_t messageId, const QString& message);

 private:
  class Worker;
  QThread* thread_ = nullptr;
  Worker* worker_ = nullptr;
};

}  // namespace inferdesk::gui
