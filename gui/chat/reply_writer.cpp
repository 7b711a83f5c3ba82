#include "gui/chat/reply_writer.h"

#include <QThread>

#include <exception>
#include <memory>
#include <set>
#include <utility>

namespace inferdesk::gui {

// Lives on the writer thread; owns the second connection.
class ReplyWriter::Worker : public QObject {
 public:
  explicit Worker(std::filesystem::path path) : path_(std::move(path)) {}

  // Each returns an error message ("" when saved). Worker thread only.
  QString append(std::int64_t id, const std::string& text) {
    if (failed_.count(id)) return {};
    return run(id, [&](store::ChatStore& chats) { chats.append_to_message(id, text); });
  }
  QString finish(std::int64_t id, store::MessageStatus status, const std::string& stats) {
    failed_.erase(id);
    return run(id, [&](store::ChatStore& chats) { chats.finish_message(id, status, stats); });
  }
  void close() {
    chats_.reset();
    db_.reset();
  }

 private:
  template <typename F>
  QString run(std::int64_t id, F&& write) {
    try {
      if (!db_) {
        // The app's own connection checked the file at start-up; do not read it all again.
        store::Database::Options options;
        options.check_integrity = false;
        db_ = std::make_unique<store::Database>(path_, std::move(options));
        chats_ = std::make_unique<store::ChatStore>(*db_);
      }
      write(*chats_);
      return {};
    } catch (const std::exception& e) {
      failed_.insert(id);
      return QString::fromUtf8(e.what());
    }
  }

  std::filesystem::path path_;
  std::unique_ptr<store::Database> db_;
  std::unique_ptr<store::ChatStore> chats_;
  std::set<std::int64_t> failed_;
};

ReplyWriter::ReplyWriter(std::filesystem::path databasePath, QObject* parent) : QObject(parent) {
  thread_ = new QThread();
  thread_->setObjectName("inferdesk-reply-writer");
  worker_ = new Worker(std::move(databasePath));
  worker_->moveToThread(thread_);
  thread_->start();
}

ReplyWriter::~ReplyWriter() {
  Worker* w = worker_;
  QMetaObject::invokeMethod(
      w, [w] { w->close(); }, Qt::BlockingQueuedConnection);  // after the queue
  QMetaObject::invokeMethod(
      w, [w] { delete w; }, Qt::BlockingQueuedConnection);
  thread_->quit();
  thread_->wait();
  delete thread_;
}

void ReplyWriter::append(std::int64_t messageId, const QString& text) {
  Worker* w = worker_;
  QMetaObject::invokeMethod(
      w,
      [this, w, messageId, utf8 = text.toStdString()] {
        const QString error = w->append(messageId, utf8);
        if (!error.isEmpty())
          QMetaObject::invokeMethod(
              this, [this, messageId, error] { emit failed(messageId, error); }, Qt::QueuedConnection);
      },
      Qt::QueuedConnection);
}

void ReplyWriter::finish(std::int64_t messageId, store::MessageStatus status, const QString& statsJson) {
  Worker* w = worker_;
  QMetaObject::invokeMethod(
      w,
      [this, w, messageId, status, stats = statsJson.toStdString()] {
        const QString error = w->finish(messageId, status, stats);
        QMetaObject::invokeMethod(
            this,
            [this, messageId, error] {
              if (!error.isEmpty()) emit failed(messageId, error);
              emit finished(messageId);
            },
            Qt::QueuedConnection);
      },
      Qt::QueuedConnection);
}

void ReplyWriter::flush() {
  QMetaObject::invokeMethod(
      worker_, [] {}, Qt::BlockingQueuedConnection);
}

}  // namespace inferdesk::gui
