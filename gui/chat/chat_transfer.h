// Export and import of chats with their file dialogs: what the chat page's Export… and Import…
// commands do. Exports read the chat from the store (the caller commits streamed text first);
// imports go through chat_import.h. Dialogs are non-blocking QFileDialogs (objectName
// "exportDialog" / "importDialog"), so the rest of the window keeps working.
#pragma once

#include <QObject>
#include <QString>

#include <cstdint>

#include "gui/app/app_context.h"

class QWidget;

namespace inferdesk::gui {

enum class ExportFormat { Json, Markdown, MarkdownAllBranches };

class ChatTransfer : public QObject {
  Q_OBJECT

 public:
  ChatTransfer(AppContext& ctx, QObject* parent = nullptr);

  // Writes chat `chatId` to `path`; false with *error when it could not.
  bool exportChat(std::int64_t chatId, const QString& path, ExportFormat format, QString* error = nullptr);
  // Opens the save dialog (file types: JSON with every branch, Markdown of the branch shown,
  // Markdown with every branch), then exports.
  void exportWithDialog(QWidget* parent, std::int64_t chatId, const QString& title, ExportFormat suggested);
  // Imports a chat export; the new chat's id, or 0 with *error.
  std::int64_t importFile(const QString& path, QString* error = nullptr);
  void importWithDialog(QWidget* parent);

 signals:
  void exported(const QString& path);
  void imported(std::int64_t chatId, int messages);
  void failed(const QString& message);

 private:
  QString modelName() const;
  AppContext& ctx_;
};

// A file name from a chat title: letters, digits, '-' and '_' only.
QString exportFileStem(const QString& title);

}  // namespace inferdesk::gui
