#include "gui/chat/chat_page.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStandardPaths>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>

#include "core/store/store.h"
#include "gui/chat/chat_export.h"
#include "gui/chat/chat_list_model.h"
#include "gui/chat/chat_session.h"
#include "gui/chat/conversation_model.h"
#include "gui/chat/conversation_view.h"
#include "gui/chat/sampling_json.h"
#include "gui/chat/sampling_panel.h"

namespace inferdesk::gui {

namespace {

constexpr int kSettingsSaveDelayMs = 400;

QLabel* section_label(const QString& text, QWidget* parent) {
  auto* l = new QLabel(text, parent);
  QFont f = l->font();
  f.setBold(true);
  l->setFont(f);
  return l;
}

// A file name from a chat title: letters, digits, '-' and '_' only.
QString file_stem(const QString& title) {
  QString s;
  for (const QChar c : title.simplified()) s += c.isLetterOrNumber() || c == '-' || c == '_' ? c : QChar('-');
  while (s.contains("--")) s.replace("--", "-");
  s = s.left(60);
  while (s.endsWith('-')) s.chop(1);
  while (s.startsWith('-')) s.remove(0, 1);
  return s.isEmpty() ? QString("chat") : s;
}

}  // namespace

ChatPage::ChatPage(AppContext& ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  setObjectName("chatPage");
  list_model_ = new ChatListModel(ctx_.chats, this);
  conversation_ = new ConversationModel(ctx_.chats, this);
  session_ = new ChatSession(ctx_, *conversation_, this);
  save_timer_ = new QTimer(this);
  save_timer_->setSingleShot(true);
  save_timer_->setInterval(kSettingsSaveDelayMs);
  buildUi();
  connectSignals();
  list_model_->reload();
  if (list_model_->rowCount() > 0) selectChat(list_model_->idAt(0));
  updateModelLabel();
  updateButtons();
}

ChatPage::~ChatPage() { saveChatSettings(); }

void ChatPage::buildUi() {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  splitter->setChildrenCollapsible(false);
  splitter->addWidget(buildListPanel());
  splitter->addWidget(buildConversationPanel());
  splitter->addWidget(buildSettingsPanel());
  splitter->setStretchFactor(0, 0);
  splitter->setStretchFactor(1, 1);
  splitter->setStretchFactor(2, 0);
  splitter->setSizes({230, 720, 290});
  layout->addWidget(splitter);
}

QWidget* ChatPage::buildListPanel() {
  auto* panel = new QWidget(this);
  auto* v = new QVBoxLayout(panel);
  v->setContentsMargins(8, 8, 4, 8);
  new_ = new QPushButton("New chat", panel);
  new_->setObjectName("newChatButton");
  v->addWidget(new_);
  search_ = new QLineEdit(panel);
  search_->setObjectName("chatSearch");
  search_->setPlaceholderText("Search chats");
  search_->setClearButtonEnabled(true);
  v->addWidget(search_);
  list_view_ = new QListView(panel);
  list_view_->setObjectName("chatList");
  list_view_->setModel(list_model_);
  list_view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  list_view_->setSelectionMode(QAbstractItemView::SingleSelection);
  list_view_->setUniformItemSizes(true);
  list_view_->setMinimumWidth(170);
  v->addWidget(list_view_, 1);
  auto* row = new QHBoxLayout();
  rename_ = new QPushButton("Rename", panel);
  rename_->setToolTip("Rename the selected chat (or double-click it)");
  delete_ = new QPushButton("Delete", panel);
  delete_->setToolTip("Delete the selected chat and all its messages");
  row->addWidget(rename_);
  row->addWidget(delete_);
  v->addLayout(row);
  return panel;
}

QWidget* ChatPage::buildConversationPanel() {
  auto* panel = new QWidget(this);
  auto* v = new QVBoxLayout(panel);
  v->setContentsMargins(4, 8, 4, 8);
  auto* header = new QHBoxLayout();
  title_ = new QLabel(panel);
  QFont tf = title_->font();
  tf.setBold(true);
  tf.setPointSizeF(tf.pointSizeF() * 1.25);
  title_->setFont(tf);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  header->addWidget(title_, 1);
  model_label_ = new QLabel(panel);
  model_label_->setObjectName("chatModelLabel");
  model_label_->setTextFormat(Qt::RichText);
  header->addWidget(model_label_);
  prompt_ = new QPushButton("Rendered prompt", panel);
  prompt_->setToolTip("Show the rendered prompt: the chat template's output for this conversation");
  header->addWidget(prompt_);
  export_ = new QToolButton(panel);
  export_->setText("Export");
  export_->setToolTip("Save this conversation (the branch shown) with each reply's statistics");
  export_->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(export_);
  menu->addAction("As Markdown\u2026", this, [this] { exportWithDialog(ExportFormat::Markdown); });
  menu->addAction("As JSON\u2026", this, [this] { exportWithDialog(ExportFormat::Json); });
  export_->setMenu(menu);
  header->addWidget(export_);
  v->addLayout(header);

  notice_ = new QLabel(panel);
  notice_->setObjectName("chatNotice");
  notice_->setWordWrap(true);
  notice_->setTextFormat(Qt::RichText);
  notice_->setTextInteractionFlags(Qt::TextBrowserInteraction);
  notice_->hide();
  v->addWidget(notice_);

  view_ = new ConversationView(*conversation_, panel);
  view_->setObjectName("conversationView");
  view_->setPlaceholder("Type a message below to start the conversation.");
  v->addWidget(view_, 1);

  auto* composer_row = new QHBoxLayout();
  composer_ = new QPlainTextEdit(panel);
  composer_->setObjectName("chatComposer");
  composer_->setPlaceholderText("Message the model\u2026  (Enter sends, Shift+Enter starts a new line)");
  composer_->setMaximumHeight(110);
  composer_->setMinimumHeight(60);
  composer_->installEventFilter(this);
  composer_row->addWidget(composer_, 1);
  auto* buttons = new QVBoxLayout();
  send_ = new QPushButton("Send", panel);
  send_->setObjectName("sendButton");
  send_->setDefault(true);
  stop_ = new QPushButton("Stop", panel);
  stop_->setObjectName("stopButton");
  stop_->setToolTip("Stop the reply (the text so far is kept)");
  buttons->addWidget(send_);
  buttons->addWidget(stop_);
  buttons->addStretch(1);
  composer_row->addLayout(buttons);
  v->addLayout(composer_row);
  return panel;
}

QWidget* ChatPage::buildSettingsPanel() {
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(250);
  auto* panel = new QWidget(scroll);
  auto* v = new QVBoxLayout(panel);
  v->setContentsMargins(4, 8, 8, 8);
  v->addWidget(section_label("System prompt", panel));
  system_prompt_ = new QPlainTextEdit(panel);
  system_prompt_->setObjectName("systemPrompt");
  system_prompt_->setPlaceholderText("Instructions for the model in this chat (optional)");
  system_prompt_->setMaximumHeight(140);
  v->addWidget(system_prompt_);
  v->addSpacing(8);
  v->addWidget(section_label("Sampling", panel));
  sampling_ = new SamplingPanel(ctx_.settings, panel);
  v->addWidget(sampling_);
  settings_note_ = new QLabel(panel);
  settings_note_->setWordWrap(true);
  settings_note_->hide();
  v->addWidget(settings_note_);
  auto* hint = new QLabel("Saved with this chat.", panel);
  QPalette pal = hint->palette();
  pal.setColor(QPalette::WindowText, palette().color(QPalette::PlaceholderText));
  hint->setPalette(pal);
  v->addWidget(hint);
  v->addStretch(1);
  scroll->setWidget(panel);
  scroll->setMinimumWidth(std::max(250, panel->minimumSizeHint().width() + 16));
  return scroll;
}

void ChatPage::connectSignals() {
  connect(new_, &QPushButton::clicked, this, [this] { newChat(); });
  connect(rename_, &QPushButton::clicked, this, &ChatPage::renameSelected);
  connect(delete_, &QPushButton::clicked, this, [this] {
    if (const std::int64_t id = currentChatId()) deleteChat(id, true);
  });
  connect(search_, &QLineEdit::textChanged, this, [this](const QString& text) {
    list_model_->setFilter(text);
    // Keep the shown chat selected when it is still listed (re-selecting it changes nothing).
    const int row = list_model_->rowOf(session_->chatId());
    if (row >= 0) list_view_->setCurrentIndex(list_model_->index(row));
  });
  connect(list_view_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid()) onChatSelected(list_model_->idAt(current.row()));
          });
  connect(list_model_, &ChatListModel::dataChanged, this, [this] {
    if (const store::Chat* c = list_model_->chatAt(list_model_->rowOf(session_->chatId())))
      title_->setText(QString::fromStdString(c->title));
  });
  connect(send_, &QPushButton::clicked, this, &ChatPage::sendComposerText);
  connect(stop_, &QPushButton::clicked, this, &ChatPage::stopReply);
  connect(prompt_, &QPushButton::clicked, this, &ChatPage::showRenderedPrompt);
  connect(notice_, &QLabel::linkActivated, this, [this](const QString& link) {
    if (link == "models") {
      emit modelsPageRequested();
      if (ctx_.show_page) ctx_.show_page(Page::Models);
    } else if (link == "dismiss") {
      clearNotice();
    }
  });
  connect(model_label_, &QLabel::linkActivated, this, [this] {
    emit modelsPageRequested();
    if (ctx_.show_page) ctx_.show_page(Page::Models);
  });

  connect(view_, &ConversationView::editSubmitted, this, [this](std::int64_t id, const QString& text) {
    saveChatSettings();
    clearNotice();
    session_->editMessage(id, text);
  });
  connect(view_, &ConversationView::regenerateRequested, this, [this](std::int64_t id) {
    saveChatSettings();
    clearNotice();
    session_->regenerate(id);
  });
  connect(view_, &ConversationView::siblingRequested, this,
          [this](std::int64_t id, int delta) { session_->showSibling(id, delta); });

  connect(session_, &ChatSession::notice, this, [this](const QString& text) { showNotice(text.toHtmlEscaped(), false); });
  connect(session_, &ChatSession::errorMessage, this, [this](const QString& text) { showNotice(text.toHtmlEscaped(), true); });
  connect(session_, &ChatSession::modelNeeded, this, &ChatPage::showLoadModelFirst);
  connect(session_, &ChatSession::generatingChanged, this, [this](std::int64_t chatId, bool) {
    if (chatId == session_->chatId()) updateButtons();
  });
  connect(session_, &ChatSession::chatChanged, list_model_, &ChatListModel::chatTouched);
  connect(list_model_, &ChatListModel::errorOccurred, this, [this](const QString& m) { showNotice(m.toHtmlEscaped(), true); });
  connect(conversation_, &ConversationModel::errorOccurred, this, [this](const QString& m) { showNotice(m.toHtmlEscaped(), true); });
  connect(sampling_, &SamplingPanel::errorOccurred, this, [this](const QString& m) { showNotice(m.toHtmlEscaped(), true); });

  connect(system_prompt_, &QPlainTextEdit::textChanged, this, &ChatPage::scheduleSettingsSave);
  connect(sampling_, &SamplingPanel::changed, this, &ChatPage::scheduleSettingsSave);
  connect(save_timer_, &QTimer::timeout, this, &ChatPage::saveChatSettings);

  if (ctx_.engine) {
    connect(ctx_.engine, &EngineController::modelLoaded, this, [this] { updateModelLabel(); });
    connect(ctx_.engine, &EngineController::modelUnloaded, this, [this] { updateModelLabel(); });
    connect(ctx_.engine, &EngineController::loadStarted, this, [this] { updateModelLabel(); });
    connect(ctx_.engine, &EngineController::loadFailed, this, [this] { updateModelLabel(); });
  }
}

std::int64_t ChatPage::currentChatId() const { return session_->chatId(); }

bool ChatPage::selectChat(std::int64_t chatId) {
  const int row = list_model_->rowOf(chatId);
  if (row < 0) return false;
  list_view_->setCurrentIndex(list_model_->index(row));
  onChatSelected(chatId);  // no-op when currentChanged already showed it
  return true;
}

void ChatPage::onChatSelected(std::int64_t chatId) {
  if (chatId == session_->chatId()) return;
  saveChatSettings();
  clearNotice();
  session_->setChat(chatId);
  loadChatSettings(chatId);
  const store::Chat* c = list_model_->chatAt(list_model_->rowOf(chatId));
  title_->setText(c ? QString::fromStdString(c->title) : QString());
  updateButtons();
  view_->scrollToEnd();
}

std::int64_t ChatPage::newChat() {
  saveChatSettings();
  const bool carry_prompt = settings_chat_ == 0;  // typed before any chat existed
  const QString system_prompt = system_prompt_->toPlainText();
  const SamplingParams sampling = sampling_->params();
  const std::int64_t id = list_model_->createChat(ChatSession::newChatTitle());
  if (id == 0) return 0;
  try {
    ctx_.chats.set_sampling_json(id, samplingToJson(sampling).toStdString());
    if (carry_prompt && !system_prompt.trimmed().isEmpty())
      ctx_.chats.set_system_prompt(id, system_prompt.toStdString());
  } catch (const std::exception& e) {
    showNotice(QString("could not save the chat's settings: %1").arg(e.what()).toHtmlEscaped(), true);
  }
  list_model_->chatTouched(id);
  selectChat(id);
  composer_->setFocus();
  return id;
}

void ChatPage::deleteChat(std::int64_t chatId, bool ask) {
  auto remove = [this, chatId] {
    session_->forgetChat(chatId);
    if (chatId == settings_chat_) {
      save_timer_->stop();
      settings_chat_ = 0;
    }
    if (!list_model_->deleteChat(chatId)) return;
    if (chatId != session_->chatId()) return;
    const std::int64_t next = list_model_->idAt(0);
    if (next != 0) {
      selectChat(next);
    } else {
      session_->setChat(0);
      title_->clear();
      loadChatSettings(0);
      updateButtons();
    }
  };
  if (!ask) {
    remove();
    return;
  }
  const store::Chat* c = list_model_->chatAt(list_model_->rowOf(chatId));
  auto* box = new QMessageBox(QMessageBox::Warning, "Delete chat",
                              QString("Delete \u201c%1\u201d and all its messages? This cannot be undone.")
                                  .arg(c ? QString::fromStdString(c->title) : QString("this chat")),
                              QMessageBox::Yes | QMessageBox::Cancel, this);
  box->setObjectName("deleteChatConfirmation");
  box->setDefaultButton(QMessageBox::Cancel);
  box->setWindowModality(Qt::WindowModal);
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box, &QMessageBox::finished, this, [remove](int result) {
    if (result == QMessageBox::Yes) remove();
  });
  box->open();
}

void ChatPage::renameSelected() {
  const QModelIndex index = list_view_->currentIndex();
  if (index.isValid()) list_view_->edit(index);
}

void ChatPage::loadChatSettings(std::int64_t chatId) {
  loading_settings_ = true;
  save_timer_->stop();
  settings_chat_ = chatId;
  QStringList problems;
  if (chatId == 0) {
    system_prompt_->clear();
  } else {
    try {
      const store::Chat chat = ctx_.chats.get_chat(chatId);
      system_prompt_->setPlainText(QString::fromStdString(chat.system_prompt));
      sampling_->setParams(samplingFromJson(QString::fromStdString(chat.sampling_json), &problems));
    } catch (const std::exception& e) {
      problems << QString("could not read the chat's settings: %1").arg(e.what());
    }
  }
  settings_note_->setText(problems.join("\n"));
  settings_note_->setVisible(!problems.isEmpty());
  loading_settings_ = false;
}

void ChatPage::scheduleSettingsSave() {
  if (loading_settings_ || settings_chat_ == 0) return;
  save_timer_->start();
}

void ChatPage::saveChatSettings() {
  save_timer_->stop();
  if (loading_settings_ || settings_chat_ == 0) return;
  try {
    const store::Chat chat = ctx_.chats.get_chat(settings_chat_);
    const std::string prompt = system_prompt_->toPlainText().toStdString();
    const std::string sampling = samplingToJson(sampling_->params()).toStdString();
    bool changed = false;
    if (prompt != chat.system_prompt) {
      ctx_.chats.set_system_prompt(settings_chat_, prompt);
      changed = true;
    }
    // A chat that never had settings ("{}") keeps none until the user changes one.
    const bool unset = chat.sampling_json == "{}" || chat.sampling_json.empty();
    if (sampling != chat.sampling_json && !(unset && sampling == samplingToJson(defaultChatSampling()).toStdString())) {
      ctx_.chats.set_sampling_json(settings_chat_, sampling);
      changed = true;
    }
    if (changed) list_model_->chatTouched(settings_chat_);
  } catch (const std::exception& e) {
    showNotice(QString("could not save the chat's settings: %1").arg(e.what()).toHtmlEscaped(), true);
  }
}

void ChatPage::sendComposerText() {
  const QString text = composer_->toPlainText();
  if (text.trimmed().isEmpty() || session_->isGenerating()) return;
  clearNotice();
  if (!ctx_.engine || !ctx_.engine->isLoaded()) {
    showLoadModelFirst();
    return;
  }
  if (session_->chatId() == 0 && newChat() == 0) return;
  saveChatSettings();
  if (session_->send(text)) {
    composer_->clear();
    view_->scrollToEnd();
  }
}

void ChatPage::stopReply() { session_->stop(); }

void ChatPage::showNotice(const QString& html, bool error) {
  notice_->setStyleSheet(error ? "QLabel#chatNotice { background: #fdecea; color: #611a15; border: 1px solid #f5c2c0; "
                                 "border-radius: 6px; padding: 6px; }"
                               : "QLabel#chatNotice { background: #fff8e1; color: #5d4300; border: 1px solid #f3dea0; "
                                 "border-radius: 6px; padding: 6px; }");
  notice_->setText(html + "  <a href=\"dismiss\">Dismiss</a>");
  notice_->show();
}

void ChatPage::showLoadModelFirst() {
  showNotice("No model is loaded: <a href=\"models\">load a model first</a> on the Models page.", true);
}

void ChatPage::clearNotice() {
  notice_->clear();
  notice_->hide();
}

void ChatPage::updateModelLabel() {
  const auto model = ctx_.engine ? ctx_.engine->loadedModel() : std::nullopt;
  if (model) {
    model_label_->setText(QString("%1 \u00b7 %2 \u00b7 %3 tokens of context")
                              .arg(model->name.toHtmlEscaped(), model->backend.toUpper())
                              .arg(model->context_length));
    model_label_->setToolTip(model->path);
  } else {
    model_label_->setText("No model loaded \u2014 <a href=\"models\">load one</a>");
    model_label_->setToolTip("Models are loaded on the Models page");
  }
}

void ChatPage::updateButtons() {
  const bool generating = session_->isGenerating();
  const bool has_chat = session_->chatId() != 0;
  send_->setEnabled(!generating);
  stop_->setEnabled(generating);
  rename_->setEnabled(has_chat);
  delete_->setEnabled(has_chat);
  prompt_->setEnabled(has_chat);
  export_->setEnabled(has_chat);
  view_->setBusy(generating);
}

bool ChatPage::eventFilter(QObject* watched, QEvent* event) {
  if (watched == composer_ && event->type() == QEvent::KeyPress) {
    const auto* key = static_cast<QKeyEvent*>(event);
    if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && !(key->modifiers() & Qt::ShiftModifier)) {
      sendComposerText();
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

QString ChatPage::renderedPromptReport() const {
  const ContextFit fit = session_->currentPrompt();
  if (!fit.ok) return fit.error;
  const auto model = ctx_.engine ? ctx_.engine->loadedModel() : std::nullopt;
  QStringList info;
  info << QString("%1 prompt tokens; the model's context holds %2.")
              .arg(fit.promptTokens)
              .arg(model ? model->context_length : 0);
  if (!fit.notice.isEmpty()) info << fit.notice;
  if (!fit.prompt.warning.isEmpty()) info << fit.prompt.warning;
  return info.join("\n") + "\n\n" + fit.prompt.text;
}

void ChatPage::showRenderedPrompt() {
  const ContextFit fit = session_->currentPrompt();
  auto* dialog = new QDialog(this);
  dialog->setObjectName("renderedPromptDialog");
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle("Rendered prompt");
  dialog->resize(720, 520);
  auto* v = new QVBoxLayout(dialog);
  const QString report = renderedPromptReport();
  const int split = report.indexOf("\n\n");
  auto* info = new QLabel(fit.ok ? report.left(split) : fit.error, dialog);
  info->setWordWrap(true);
  v->addWidget(info);
  auto* text = new QPlainTextEdit(dialog);
  text->setReadOnly(true);
  text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text->setPlainText(fit.ok ? fit.prompt.text : QString());
  text->setVisible(fit.ok);
  v->addWidget(text, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
  connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  v->addWidget(buttons);
  dialog->show();
}

bool ChatPage::exportChat(const QString& path, ExportFormat format, QString* error) {
  if (session_->chatId() == 0) {
    if (error) *error = "no chat is shown";
    return false;
  }
  ChatExportInput in;
  session_->flushWrites();  // a reply still streaming is exported as far as it has come
  try {
    in.chat = ctx_.chats.get_chat(session_->chatId());
    if (in.chat.current_leaf != 0) in.messages = ctx_.chats.path_to(in.chat.current_leaf);
  } catch (const std::exception& e) {
    if (error) *error = QString("could not read the chat: %1").arg(e.what());
    return false;
  }
  if (const auto model = ctx_.engine ? ctx_.engine->loadedModel() : std::nullopt) in.modelName = model->name;
  const QByteArray data = format == ExportFormat::Markdown ? exportMarkdown(in) : exportJson(in);
  return writeExportFile(path, data, error);
}

void ChatPage::exportWithDialog(ExportFormat format) {
  if (session_->chatId() == 0) return;
  const bool md = format == ExportFormat::Markdown;
  const store::Chat* c = list_model_->chatAt(list_model_->rowOf(session_->chatId()));
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  const QString suggested = dir + "/" + file_stem(c ? QString::fromStdString(c->title) : QString()) + (md ? ".md" : ".json");
  const QString path = QFileDialog::getSaveFileName(this, md ? "Export chat as Markdown" : "Export chat as JSON", suggested,
                                                    md ? "Markdown (*.md)" : "JSON (*.json)");
  if (path.isEmpty()) return;
  QString error;
  if (exportChat(path, format, &error))
    showNotice(QString("Saved %1").arg(path.toHtmlEscaped()), false);
  else
    showNotice(error.toHtmlEscaped(), true);
}

}  // namespace inferdesk::gui
