#include "gui/chat/chat_transfer.h"

#include <QFileDialog>
#include <QStandardPaths>

#include <exception>

#include "core/store/store.h"
#include "gui/chat/chat_export.h"
#include "gui/chat/chat_import.h"
#include "gui/engine/engine_controller.h"

namespace inferdesk::gui {

namespace {

const QString kJsonFilter = QStringLiteral("JSON \u2014 the whole chat, every branch (*.json)");
const QString kMarkdownFilter = QStringLiteral("Markdown \u2014 the branch shown (*.md)");
const QString kAllBranchesFilter = QStringLiteral("Markdown \u2014 every branch (*.md)");

ExportFormat format_of_filter(const QString& filter) {
  if (filter == kMarkdownFilter) return ExportFormat::Markdown;
  if (filter == kAllBranchesFilter) return ExportFormat::MarkdownAllBranches;
  return ExportFormat::Json;
}

QString filter_of(ExportFormat f) {
  switch (f) {
    case ExportFormat::Markdown: return kMarkdownFilter;
    case ExportFormat::MarkdownAllBranches: return kAllBranchesFilter;
    case ExportFormat::Json: break;
  }
  return kJsonFilter;
}

}  // namespace

QString exportFileStem(const QString& title) {
  QString s;
  for (const QChar c : title.simplified()) s += c.isLetterOrNumber() || c == '-' || c == '_' ? c : QChar('-');
  while (s.contains("--")) s.replace("--", "-");
  s = s.left(60);
  while (s.endsWith('-')) s.chop(1);
  while (s.startsWith('-')) s.remove(0, 1);
  return s.isEmpty() ? QString("chat") : s;
}

ChatTransfer::ChatTransfer(AppContext& ctx, QObject* parent) : QObject(parent), ctx_(ctx) {}

QString ChatTransfer::modelName() const {
  const auto model = ctx_.engine ? ctx_.engine->loadedModel() : std::nullopt;
  return model ? model->name : QString();
}

bool ChatTransfer::exportChat(std::int64_t chatId, const QString& path, ExportFormat format, QString* error) {
  ChatExportInput in;
  try {
    in = readChatForExport(ctx_.chats, chatId, modelName());
  } catch (const std::exception& e) {
    if (error) *error = QString("could not read the chat: %1").arg(e.what());
    return false;
  }
  const QByteArray data = format == ExportFormat::Json       ? exportJson(in)
                          : format == ExportFormat::Markdown ? exportMarkdown(in)
                                                             : exportMarkdownAllBranches(in);
  return writeExportFile(path, data, error);
}

void ChatTransfer::exportWithDialog(QWidget* parent, std::int64_t chatId, const QString& title,
                                    ExportFormat suggested) {
  auto* dialog = new QFileDialog(parent, "Export chat");
  dialog->setObjectName("exportDialog");
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setAcceptMode(QFileDialog::AcceptSave);
  dialog->setNameFilters({kJsonFilter, kMarkdownFilter, kAllBranchesFilter});
  dialog->selectNameFilter(filter_of(suggested));
  const bool json = suggested == ExportFormat::Json;
  dialog->setDefaultSuffix(json ? "json" : "md");
  dialog->setDirectory(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation));
  dialog->selectFile(exportFileStem(title) + (json ? ".json" : ".md"));
  dialog->setWindowModality(Qt::WindowModal);
  connect(dialog, &QFileDialog::filterSelected, dialog, [dialog](const QString& filter) {
    dialog->setDefaultSuffix(format_of_filter(filter) == ExportFormat::Json ? "json" : "md");
  });
  connect(dialog, &QFileDialog::fileSelected, this, [this, dialog, chatId](const QString& path) {
    QString error;
    if (exportChat(chatId, path, format_of_filter(dialog->selectedNameFilter()), &error))
      emit exported(path);
    else
      emit failed(error);
  });
  dialog->open();
}

std::int64_t ChatTransfer::importFile(const QString& path, QString* error) {
  const ChatImportResult r = importChatFile(ctx_.chats, path, ctx_.db.now_ms());
  if (!r.ok) {
    if (error) *error = r.error;
    return 0;
  }
  emit imported(r.chat_id, r.messages);
  return r.chat_id;
}

void ChatTransfer::importWithDialog(QWidget* parent) {
  auto* dialog = new QFileDialog(parent, "Import chat");
  dialog->setObjectName("importDialog");
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setAcceptMode(QFileDialog::AcceptOpen);
  dialog->setFileMode(QFileDialog::ExistingFile);
  dialog->setNameFilters({"InferDesk chat export (*.json)", "All files (*)"});
  dialog->setDirectory(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation));
  dialog->setWindowModality(Qt::WindowModal);
  connect(dialog, &QFileDialog::fileSelected, this, [this](const QString& path) {
    QString error;
    if (importFile(path, &error) == 0) emit failed(error);
  });
  dialog->open();
}

}  // namespace inferdesk::gui
