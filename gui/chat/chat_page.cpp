#include "gui/chat/chat_page.h"

#include <QAction>
#include <QDialog>
#include <QDialogButtonBox>
#include <QEvent>
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
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>

#include "core/store/store.h"
#include "gui/app/elided_label.h"
#include "gui/app/theme.h"
#include "gui/chat/chat_list_model.h"
#include "gui/chat/chat_session.h"
#include "gui/chat/conversation_model.h"
#include "gui/chat/conversation_view.h"
#include "gui/chat/markdown_view.h"
#include "gui/chat/pending_view.h"
#include "gui/chat/provider_picker.h"
#include "gui/chat/reply_provider.h"
#include "gui/chat/sampling_json.h"
#include "gui/chat/sampling_panel.h"

namespace inferdesk::gui {

namespace {

constexpr int kSettingsSaveDelayMs = 400;
constexpr const char* kSplitterKey = "chat/splitter_sizes";

QLabel* section_label(const QString& text, QWidget* parent) {
  auto* l = new QLabel(text, parent);
  QFont f = l->font();
  f.setBold(true);
  l->setFont(f);
  return l;
}

QAction* make_action(const QString& text, const QKeySequence& key, QWidget* parent) {
  auto* a = new QAction(text, parent);
  a->setShortcut(key);
  parent->addAction(a);  // active wherever the page's window has focus (WindowShortcut)
  return a;
}

}  // namespace

ChatPage::ChatPage(AppContext& ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  setObjectName("chatPage");
  list_model_ = new ChatListModel(ctx_.chats, this);
  conversation_ = new ConversationModel(ctx_.chats, this);
  session_ = new ChatSession(ctx_, *conversation_, this);
  transfer_ = new ChatTransfer(ctx_, this);
  save_timer_ = new QTimer(this);
  save_timer_->setSingleShot(true);
  save_timer_->setInterval(kSettingsSaveDelayMs);
  buildUi();
  buildActions();
  connectSignals();
  connectSession();
  list_model_->reload();
  if (list_model_->rowCount() > 0) selectChat(list_model_->idAt(0));
  updateModelLabel();
  updateButtons();
}

ChatPage::~ChatPage() { saveChatSettings(); }

void ChatPage::buildUi() {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  splitter_ = new QSplitter(Qt::Horizontal, this);
  splitter_->setObjectName("chatSplitter");
  splitter_->setChildrenCollapsible(false);
  splitter_->addWidget(buildListPanel());
  splitter_->addWidget(buildConversationPanel());
  splitter_->addWidget(buildSettingsPanel());
  // Only the conversation takes what the window gains or loses: the side columns keep their width.
  splitter_->setStretchFactor(0, 0);
  splitter_->setStretchFactor(1, 1);
  splitter_->setStretchFactor(2, 0);
  splitter_->setSizes({230, 720, 290});
  restoreSplitter();
  layout->addWidget(splitter_);
  // The columns' widths as the user drags them, kept for the next start (saved once dragging stops).
  auto* save_sizes = new QTimer(this);
  save_sizes->setSingleShot(true);
  save_sizes->setInterval(500);
  connect(splitter_, &QSplitter::splitterMoved, save_sizes, qOverload<>(&QTimer::start));
  connect(save_sizes, &QTimer::timeout, this, &ChatPage::saveSplitter);
}

QWidget* ChatPage::buildListPanel() {
  auto* panel = new QWidget(this);
  auto* v = new QVBoxLayout(panel);
  v->setContentsMargins(8, 8, 4, 8);
  new_ = new QPushButton("New chat", panel);
  new_->setObjectName("newChatButton");
  new_->setToolTip("Start a new chat (Ctrl+N)");
  v->addWidget(new_);
  search_ = new QLineEdit(panel);
  search_->setObjectName("chatSearch");
  search_->setPlaceholderText("Search chats (Ctrl+F)");
  search_->setClearButtonEnabled(true);
  v->addWidget(search_);
  list_view_ = new QListView(panel);
  list_view_->setObjectName("chatList");
  list_view_->setModel(list_model_);
  list_view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  list_view_->setSelectionMode(QAbstractItemView::SingleSelection);
  list_view_->setUniformItemSizes(true);
  list_view_->setTextElideMode(Qt::ElideRight);  // long titles end in "…"; the tooltip has them whole
  list_view_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_view_->setMinimumWidth(140);
  v->addWidget(list_view_, 1);
  auto* row = new QHBoxLayout();
  rename_ = new QPushButton("Rename", panel);
  rename_->setToolTip("Rename the selected chat (or double-click it)");
  delete_ = new QPushButton("Delete", panel);
  delete_->setToolTip("Delete the selected chat and all its messages (Delete)");
  row->addWidget(rename_);
  row->addWidget(delete_);
  v->addLayout(row);
  return panel;
}

QWidget* ChatPage::buildConversationPanel() {
  auto* panel = new QWidget(this);
  panel->setMinimumWidth(260);
  auto* v = new QVBoxLayout(panel);
  v->setContentsMargins(4, 8, 4, 8);
  auto* header = new QHBoxLayout();
  title_ = new ElidedLabel(panel);
  title_->setObjectName("chatTitle");
  QFont tf = title_->font();
  tf.setBold(true);
  tf.setPointSizeF(tf.pointSizeF() * 1.25);
  title_->setFont(tf);
  header->addWidget(title_, 3);
  model_label_ = new ElidedLabel(panel);
  model_label_->setObjectName("chatModelLabel");
  header->addWidget(model_label_, 2);
  provider_ = new ProviderPicker(ctx_, *session_, panel);
  connect(provider_, &ProviderPicker::errorMessage, this,
          [this](const QString& m) { showNotice(m.toHtmlEscaped(), true); });
  header->addWidget(provider_);
  connect(provider_, &ProviderPicker::providerChanged, this, [this] { updateModelLabel(); });
  load_link_ = new QLabel("<a href=\"models\">Load a model</a>", panel);
  load_link_->setObjectName("chatLoadModelLink");
  load_link_->setTextInteractionFlags(Qt::LinksAccessibleByMouse | Qt::LinksAccessibleByKeyboard);
  header->addWidget(load_link_);
  prompt_ = new QPushButton("Prompt", panel);
  prompt_->setToolTip("Show the rendered prompt: the chat template's output for this conversation");
  header->addWidget(prompt_);
  export_ = new QToolButton(panel);
  export_->setText("Export");
  export_->setToolTip("Save this chat: JSON keeps every branch, Markdown is for reading (Ctrl+E)");
  export_->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(export_);
  menu->addAction("As JSON (every branch)\u2026", this, [this] { exportWithDialog(ExportFormat::Json); });
  menu->addAction("As Markdown (the branch shown)\u2026", this, [this] { exportWithDialog(ExportFormat::Markdown); });
  menu->addAction("As Markdown (every branch)\u2026", this,
                  [this] { exportWithDialog(ExportFormat::MarkdownAllBranches); });
  export_->setMenu(menu);
  header->addWidget(export_);
  v->addLayout(header);

  notice_ = new QLabel(panel);
  notice_->setObjectName("chatNotice");
  notice_->setWordWrap(true);
  notice_->setTextFormat(Qt::RichText);
  notice_->setTextInteractionFlags(Qt::TextBrowserInteraction);
  notice_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  notice_->hide();
  v->addWidget(notice_);

  view_ = new ConversationView(*conversation_, panel);
  view_->setObjectName("conversationView");
  v->addWidget(view_, 1);

  pending_ = new PendingView(panel);
  v->addWidget(pending_);

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
  stop_->setToolTip("Stop the reply (the text so far is kept) (Esc)");
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
  v->addWidget(new DimLabel("Saved with this chat.", panel));
  v->addStretch(1);
  scroll->setWidget(panel);
  // Modest, so the three columns fit a small screen; the form wraps below this.
  scroll->setMinimumWidth(std::clamp(panel->minimumSizeHint().width() + 16, 200, 240));
  return scroll;
}

void ChatPage::buildActions() {
  actions_.newChat = make_action("&New chat", QKeySequence(Qt::CTRL | Qt::Key_N), this);
  actions_.importChat = make_action("&Import chat\u2026", QKeySequence(Qt::CTRL | Qt::Key_O), this);
  actions_.exportChat = make_action("&Export chat\u2026", QKeySequence(Qt::CTRL | Qt::Key_E), this);
  actions_.find = make_action("&Find chats", QKeySequence(Qt::CTRL | Qt::Key_F), this);
  actions_.focusComposer = make_action("Go to the &message box", QKeySequence(Qt::CTRL | Qt::Key_L), this);
  actions_.stop = make_action("&Stop the reply", QKeySequence(Qt::Key_Escape), this);
  actions_.regenerate = make_action("&Regenerate the last reply", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R), this);
  // Delete acts in the chat list only: elsewhere the key edits text.
  actions_.deleteChat = new QAction("&Delete chat\u2026", this);
  actions_.deleteChat->setShortcut(QKeySequence::Delete);
  actions_.deleteChat->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  list_view_->addAction(actions_.deleteChat);
  connect(actions_.newChat, &QAction::triggered, this, [this] {
    if (ctx_.show_page) ctx_.show_page(Page::Chat);
    newChat();
  });
  connect(actions_.importChat, &QAction::triggered, this, &ChatPage::importWithDialog);
  connect(actions_.exportChat, &QAction::triggered, this, [this] { exportWithDialog(ExportFormat::Json); });
  connect(actions_.find, &QAction::triggered, this, &ChatPage::focusSearch);
  connect(actions_.focusComposer, &QAction::triggered, this, &ChatPage::focusComposer);
  connect(actions_.stop, &QAction::triggered, this, &ChatPage::stopReply);
  connect(actions_.regenerate, &QAction::triggered, this, &ChatPage::regenerateLast);
  connect(actions_.deleteChat, &QAction::triggered, this, [this] {
    // The chat under the list's cursor (it may differ from the one shown while a search hides it).
    const QModelIndex index = list_view_->currentIndex();
    const std::int64_t id = index.isValid() ? list_model_->idAt(index.row()) : currentChatId();
    if (id != 0) deleteChat(id, true);
  });
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
  connect(list_view_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& current) {
    if (current.isValid()) onChatSelected(list_model_->idAt(current.row()));
  });
  connect(list_model_, &ChatListModel::dataChanged, this, &ChatPage::updateTitle);
  connect(send_, &QPushButton::clicked, this, &ChatPage::sendComposerText);
  connect(stop_, &QPushButton::clicked, this, &ChatPage::stopReply);
  connect(prompt_, &QPushButton::clicked, this, &ChatPage::showRenderedPrompt);
  connect(notice_, &QLabel::linkActivated, this, [this](const QString& link) {
    if (link == "models") {
      goToModels();
    } else if (link == "offer") {
      auto action = std::move(offered_);
      clearNotice();
      if (action) action();
    } else if (link == "dismiss") {
      clearNotice();
    }
  });
  connect(load_link_, &QLabel::linkActivated, this, &ChatPage::goToModels);
  connect(view_, &ConversationView::linkActivated, this, [this](const QString& link) {
    if (link == "models") goToModels();
  });
  connect(list_model_, &ChatListModel::errorOccurred, this,
          [this](const QString& m) { showNotice(m.toHtmlEscaped(), true); });
  connect(conversation_, &ConversationModel::errorOccurred, this,
          [this](const QString& m) { showNotice(m.toHtmlEscaped(), true); });
  connect(sampling_, &SamplingPanel::errorOccurred, this,
          [this](const QString& m) { showNotice(m.toHtmlEscaped(), true); });
  connect(transfer_, &ChatTransfer::failed, this, [this](const QString& m) { showNotice(m.toHtmlEscaped(), true); });
  connect(transfer_, &ChatTransfer::exported, this,
          [this](const QString& path) { showNotice(QString("Saved %1").arg(path.toHtmlEscaped()), false); });
  connect(transfer_, &ChatTransfer::imported, this, [this](std::int64_t id, int messages) {
    list_model_->reload();
    selectChat(id);
    showNotice(QString("Imported \u201c%1\u201d (%2 messages).").arg(title_->text().toHtmlEscaped()).arg(messages),
               false);
  });
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

void ChatPage::connectSession() {
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
  connect(session_, &ChatSession::notice, this,
          [this](const QString& text) { showNotice(text.toHtmlEscaped(), false); });
  connect(session_, &ChatSession::errorMessage, this,
          [this](const QString& text) { showNotice(text.toHtmlEscaped(), true); });
  connect(session_, &ChatSession::modelNeeded, this, &ChatPage::showLoadModelFirst);
  connect(session_, &ChatSession::generatingChanged, this, [this](std::int64_t chatId, bool) {
    if (chatId == session_->chatId()) updateButtons();
  });
  connect(session_, &ChatSession::queueChanged, this, [this](std::int64_t chatId) {
    if (chatId == session_->chatId()) updatePending();
  });
  connect(session_, &ChatSession::chatChanged, list_model_, &ChatListModel::chatTouched);
  connect(pending_, &PendingView::removeRequested, this,
          [this](int index) { session_->removeQueued(session_->chatId(), index); });
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
  updateTitle();
  updateButtons();
  updatePending();
  view_->scrollToEnd();
}

void ChatPage::updateTitle() {
  const std::int64_t id = session_->chatId();
  QString title;
  if (const store::Chat* c = list_model_->chatAt(list_model_->rowOf(id))) {
    title = QString::fromStdString(c->title);
  } else if (id != 0) {  // hidden by a search: read it from the store
    try {
      title = QString::fromStdString(ctx_.chats.get_chat(id).title);
    } catch (const std::exception&) {
    }
  }
  if (title_->text() != title) title_->setFullText(title);
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
      title_->setFullText(QString());
      loadChatSettings(0);
      updateButtons();
      updatePending();
    }
  };
  if (!ask) {
    remove();
    return;
  }
  // Named from the store: a search may hide the chat from the list.
  QString title = "this chat";
  try {
    title = QString::fromStdString(ctx_.chats.get_chat(chatId).title);
  } catch (const std::exception&) {
  }
  auto* box = new QMessageBox(QMessageBox::Warning, "Delete chat",
                              QString("Delete \u201c%1\u201d and all its messages? This cannot be undone.").arg(title),
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
    if (changed) list_model_->chatTouched(settings_chat_);  // refreshed in place, not moved
  } catch (const std::exception& e) {
    showNotice(QString("could not save the chat's settings: %1").arg(e.what()).toHtmlEscaped(), true);
  }
}

void ChatPage::sendComposerText() {
  const QString text = composer_->toPlainText();
  if (text.trimmed().isEmpty()) {
    if (session_->isQueuePaused(session_->chatId())) session_->resumeQueue();
    return;
  }
  clearNotice();
  // Whoever answers must be ready: the embedded engine needs a loaded model, a remote endpoint not.
  if (!session_->provider() || !session_->provider()->ready()) {
    showLoadModelFirst();
    return;
  }
  if (session_->chatId() == 0 && newChat() == 0) return;
  saveChatSettings();
  if (session_->sendOrQueue(text)) {
    composer_->clear();
    view_->scrollToEnd();
  }
}

void ChatPage::stopReply() { session_->stop(); }

void ChatPage::regenerateLast() {
  saveChatSettings();
  clearNotice();
  session_->regenerateLast();
}

void ChatPage::focusSearch() {
  if (ctx_.show_page) ctx_.show_page(Page::Chat);
  search_->setFocus(Qt::ShortcutFocusReason);
  search_->selectAll();
}

void ChatPage::focusComposer() {
  if (ctx_.show_page) ctx_.show_page(Page::Chat);
  composer_->setFocus(Qt::ShortcutFocusReason);
}

void ChatPage::goToModels() {
  emit modelsPageRequested();
  if (ctx_.show_page) ctx_.show_page(Page::Models);
}

void ChatPage::showNotice(const QString& html, bool error, const QString& dismissText) {
  offered_ = nullptr;
  notice_error_ = error;
  notice_->setStyleSheet(bannerStyleSheet(palette(), notice_->objectName(), error));
  notice_->setText(html + QString("  <a href=\"dismiss\">%1</a>").arg(dismissText));
  notice_->show();
}

void ChatPage::offer(const QString& text, const QString& actionText, std::function<void()> action) {
  showNotice(text.toHtmlEscaped() + QString("  <a href=\"offer\">%1</a> \u00b7").arg(actionText.toHtmlEscaped()), false,
             "Not now");
  offered_ = std::move(action);
}

void ChatPage::showLoadModelFirst() {
  showNotice("No model is loaded: <a href=\"models\">load a model first</a> on the Models page.", true);
}

void ChatPage::clearNotice() {
  offered_ = nullptr;
  notice_->clear();
  notice_->hide();
}

void ChatPage::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange || !notice_) return;
  if (!notice_->isHidden()) notice_->setStyleSheet(bannerStyleSheet(palette(), notice_->objectName(), notice_error_));
  // Rich text keeps the link colour of the palette it was laid out in: lay it out again.
  for (QLabel* label : {notice_, load_link_}) {
    const QString text = label->text();
    label->clear();
    label->setText(text);
  }
}

void ChatPage::updateModelLabel() {
  if (const RemoteProvider* remote = provider_ ? provider_->remote() : nullptr) {
    // A remote endpoint answers: name its model (the one the requests ask for) and where it runs.
    const auto& ep = remote->endpoint();
    const QString model = ep.model.empty() ? tr("the server's default model") : QString::fromStdString(ep.model);
    // The picker beside it names the endpoint; the label names the model, the tooltip where it runs.
    model_label_->setFullText(model);
    model_label_->setDetailToolTip(tr("The model of the remote endpoint %1 at %2")
                                       .arg(QString::fromStdString(ep.name), QString::fromStdString(ep.base_url)));
    view_->setPlaceholder(
        tr("Replies come from %1. Type a message below.").arg(QString::fromStdString(ep.name).toHtmlEscaped()));
    load_link_->setVisible(false);
    return;
  }
  const auto model = ctx_.engine ? ctx_.engine->loadedModel() : std::nullopt;
  if (model) {
    model_label_->setFullText(QString("%1 \u00b7 %2 \u00b7 %3 tokens of context")
                                  .arg(model->name, model->backend.toUpper())
                                  .arg(model->context_length));
    model_label_->setDetailToolTip(model->path);
    view_->setPlaceholder("Type a message below to start the conversation.");
  } else {
    model_label_->setFullText("No model loaded");
    model_label_->setDetailToolTip("Models are loaded on the Models page");
    view_->setPlaceholder("No model is loaded: <a href=\"models\">load a model first</a> on the Models page, "
                          "then type a message below.");
  }
  load_link_->setVisible(!model);
}

void ChatPage::updateButtons() {
  const bool generating = session_->isGenerating();
  const bool has_chat = session_->chatId() != 0;
  // While a reply is written, Send queues the message (it goes out when the reply ends).
  send_->setEnabled(true);
  send_->setText(generating ? "Queue" : "Send");
  send_->setToolTip(generating ? "A reply is being written: this message waits and is sent, on its own, when it ends"
                               : "Send the message (Enter)");
  stop_->setEnabled(generating);
  rename_->setEnabled(has_chat);
  delete_->setEnabled(has_chat);
  prompt_->setEnabled(has_chat);
  export_->setEnabled(has_chat);
  actions_.exportChat->setEnabled(has_chat);
  actions_.deleteChat->setEnabled(has_chat);
  actions_.stop->setEnabled(generating);
  actions_.regenerate->setEnabled(has_chat && !generating && conversation_->rowCount() > 0);
  view_->setBusy(generating);
}

void ChatPage::updatePending() {
  const std::int64_t id = session_->chatId();
  pending_->setMessages(session_->queued(id), session_->isQueuePaused(id));
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
  text->setFont(fixedPitchFont());
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
  session_->flushWrites();  // a reply still streaming is exported as far as it has come
  return transfer_->exportChat(session_->chatId(), path, format, error);
}

void ChatPage::exportWithDialog(ExportFormat format) {
  if (session_->chatId() == 0) return;
  session_->flushWrites();
  transfer_->exportWithDialog(this, session_->chatId(), title_->text(), format);
}

bool ChatPage::importChat(const QString& path, QString* error) { return transfer_->importFile(path, error) != 0; }

void ChatPage::importWithDialog() {
  if (ctx_.show_page) ctx_.show_page(Page::Chat);
  transfer_->importWithDialog(this);
}

void ChatPage::restoreSplitter() {
  try {
    const auto v = ctx_.settings.get(kSplitterKey);
    if (!v) return;
    QList<int> sizes;
    for (const QString& part : QString::fromStdString(*v).split(',')) sizes << part.toInt();
    if (sizes.size() == 3 && std::all_of(sizes.begin(), sizes.end(), [](int s) { return s > 0 && s < 10000; }))
      splitter_->setSizes(sizes);
  } catch (const std::exception&) {
    // An unreadable setting only costs the columns their widths.
  }
}

void ChatPage::saveSplitter() {
  if (ctx_.db.read_only()) return;
  QStringList parts;
  for (int s : splitter_->sizes()) parts << QString::number(s);
  try {
    ctx_.settings.set(kSplitterKey, parts.join(',').toStdString());
  } catch (const std::exception&) {
  }
}

}  // namespace inferdesk::gui
