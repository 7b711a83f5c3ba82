#include "gui/chat/chat_session.h"

#include <algorithm>
#include <exception>
#include <set>

#include "core/store/store.h"
#include "gui/chat/conversation_model.h"
#include "gui/chat/markdown_view.h"
#include "gui/chat/reply_provider.h"
#include "gui/chat/reply_writer.h"
#include "gui/chat/sampling_json.h"

namespace inferdesk::gui {

namespace {

QString key_for(std::int64_t chatId, std::int64_t messageId) {
  return QString("chat%1-msg%2").arg(chatId).arg(messageId);
}

store::MessageStatus status_for(const QString& finishReason) {
  if (finishReason == "cancelled") return store::MessageStatus::Stopped;
  if (finishReason == "error") return store::MessageStatus::Error;
  return store::MessageStatus::Complete;
}

}  // namespace

ChatSession::ChatSession(AppContext& ctx, ConversationModel& conversation, QObject* parent)
    : QObject(parent), ctx_(ctx), conversation_(conversation) {
  writer_ = new ReplyWriter(ctx_.db.path(), this);
  connect(writer_, &ReplyWriter::finished, this, &ChatSession::onSaved);
  connect(writer_, &ReplyWriter::failed, this, &ChatSession::onSaveFailed);
  engine_provider_ = new EngineProvider(ctx_.engine, this);
  setProvider(nullptr);
}

void ChatSession::setProvider(ReplyProvider* provider) {
  ReplyProvider* next = provider ? provider : engine_provider_;
  if (next == provider_) return;
  // A stream keeps hearing the provider it was sent to; only a provider no stream uses is let go.
  const bool in_use = std::any_of(streams_.begin(), streams_.end(),
                                  [this](const auto& kv) { return kv.second.provider == provider_; });
  if (provider_ && provider_ != engine_provider_ && !in_use) disconnect(provider_, nullptr, this, nullptr);
  provider_ = next;
  connect(provider_, &ReplyProvider::tokensArrived, this, &ChatSession::onTokens, Qt::UniqueConnection);
  connect(provider_, &ReplyProvider::finished, this, &ChatSession::onFinished, Qt::UniqueConnection);
}

ChatSession::~ChatSession() {
  for (const auto& [key, s] : streams_) {
    if (s.engine_done) continue;  // its end is queued already
    s.provider->stop(key);
    writer_->finish(s.message_id, store::MessageStatus::Stopped, R"({"finish_reason":"cancelled"})");
  }
  // The writer (a child) commits what is queued when it is destroyed; a failure there is
  // repaired at the next start (mark_interrupted_streams).
}

void ChatSession::flushWrites() { writer_->flush(); }

void ChatSession::setChat(std::int64_t chatId) {
  chat_id_ = chatId;
  conversation_.setChat(chatId);
}

bool ChatSession::isGenerating(std::int64_t chatId) const { return streamingMessage(chatId) != 0; }

std::int64_t ChatSession::streamingMessage(std::int64_t chatId) const {
  for (const auto& [key, s] : streams_)
    if (s.chat_id == chatId) return s.message_id;
  return 0;
}

void ChatSession::fail(const QString& what, const std::exception& e) {
  emit errorMessage(QString("%1: %2").arg(what, QString::fromUtf8(e.what())));
}

bool ChatSession::modelReady() {
  if (provider_->ready()) return true;
  emit modelNeeded();
  return false;
}

ChatSession::Conversation ChatSession::conversationTo(std::int64_t chatId, std::int64_t leafId) const {
  writer_->flush();  // replies streamed so far are in the store
  Conversation c;
  const store::Chat chat = ctx_.chats.get_chat(chatId);
  if (!chat.system_prompt.empty()) {
    c.messages.push_back({"system", QString::fromStdString(chat.system_prompt)});
    c.ids.push_back(0);
  }
  if (leafId == 0) return c;
  for (const auto& m : ctx_.chats.path_to(leafId)) {
    c.messages.push_back({store::to_string(m.role), QString::fromStdString(m.content)});
    c.ids.push_back(m.id);
  }
  return c;
}

ContextFit ChatSession::fit(const Conversation& conv, const SamplingParams& params) const {
  return provider_->fit(conv.messages, params);
}

ContextFit ChatSession::currentPrompt() const {
  ContextFit f;
  if (!provider_->ready()) {
    f.error = "No model is loaded: load one on the Models page to see the prompt it would get.";
    return f;
  }
  try {
    if (chat_id_ == 0) {
      f.error = "No chat is selected.";
      return f;
    }
    const store::Chat chat = ctx_.chats.get_chat(chat_id_);
    const Conversation conv = conversationTo(chat_id_, chat.current_leaf);
    return fit(conv, samplingFromJson(QString::fromStdString(chat.sampling_json)));
  } catch (const std::exception& e) {
    f.error = QString("could not read the chat: %1").arg(e.what());
    return f;
  }
}

bool ChatSession::fitOrRefuse(std::int64_t chatId, const Conversation& conv, SamplingParams& params, ContextFit& f) {
  params = samplingFromJson(QString::fromStdString(ctx_.chats.get_chat(chatId).sampling_json));
  f = fit(conv, params);
  if (!f.ok) emit errorMessage(f.error);
  return f.ok;
}

bool ChatSession::askUnder(std::int64_t chatId, std::int64_t parentId, const QString& content) {
  Conversation conv = conversationTo(chatId, parentId);
  conv.messages.push_back({"user", content});
  conv.ids.push_back(0);
  SamplingParams params;
  ContextFit f;
  if (!fitOrRefuse(chatId, conv, params, f)) return false;  // nothing saved
  const std::int64_t user_id = ctx_.chats.add_message(chatId, parentId, store::Role::User, content.toStdString());
  conv.ids.back() = user_id;
  maybeTitleChat(chatId, content);
  if (conversation_.chatId() == chatId) conversation_.sync();  // shown as sent only now that it is saved
  return startReply(chatId, user_id, conv, std::move(f), params);
}

bool ChatSession::sendTo(std::int64_t chatId, const QString& content) {
  if (content.isEmpty() || chatId == 0 || isGenerating(chatId) || !modelReady()) return false;
  try {
    return askUnder(chatId, ctx_.chats.get_chat(chatId).current_leaf, content);
  } catch (const std::exception& e) {
    fail("could not send the message", e);
    return false;
  }
}

bool ChatSession::send(const QString& text) { return sendTo(chat_id_, text.trimmed()); }

bool ChatSession::sendOrQueue(const QString& text) {
  const QString content = text.trimmed();
  if (content.isEmpty() || chat_id_ == 0) return false;
  const auto q = queues_.find(chat_id_);
  const bool waiting = q != queues_.end() && !q->second.texts.empty();
  if (!isGenerating() && !waiting) return send(content);
  queues_[chat_id_].texts.push_back(content);  // behind what was typed before it
  emit queueChanged(chat_id_);
  resumeQueue();
  return true;
}

QStringList ChatSession::queued(std::int64_t chatId) const {
  const auto q = queues_.find(chatId);
  return q == queues_.end() ? QStringList() : QStringList(q->second.texts.begin(), q->second.texts.end());
}

bool ChatSession::isQueuePaused(std::int64_t chatId) const {
  const auto q = queues_.find(chatId);
  return q != queues_.end() && q->second.paused && !q->second.texts.empty();
}

bool ChatSession::removeQueued(std::int64_t chatId, int index) {
  const auto q = queues_.find(chatId);
  if (q == queues_.end() || index < 0 || index >= static_cast<int>(q->second.texts.size())) return false;
  q->second.texts.erase(q->second.texts.begin() + index);
  if (q->second.texts.empty()) queues_.erase(q);
  emit queueChanged(chatId);
  return true;
}

void ChatSession::resumeQueue() {
  const auto q = queues_.find(chat_id_);
  if (q == queues_.end()) return;
  if (q->second.paused) {
    q->second.paused = false;
    emit queueChanged(chat_id_);
  }
  sendNextQueued(chat_id_);
}

void ChatSession::sendNextQueued(std::int64_t chatId) {
  const auto q = queues_.find(chatId);
  if (q == queues_.end() || q->second.paused || q->second.texts.empty() || isGenerating(chatId)) return;
  const QString next = q->second.texts.front();
  q->second.texts.pop_front();
  const bool sent = sendTo(chatId, next);
  const auto after = queues_.find(chatId);  // signals emitted while sending may have changed it
  if (!sent) {                              // kept, first in line, until the user resumes or removes it
    Queue& kept = queues_[chatId];
    kept.texts.push_front(next);
    kept.paused = true;
  } else if (after != queues_.end() && after->second.texts.empty()) {
    queues_.erase(after);
  }
  emit queueChanged(chatId);
}

bool ChatSession::regenerate(std::int64_t assistantMessageId) {
  if (chat_id_ == 0 || isGenerating() || !modelReady()) return false;
  try {
    const store::Message reply = ctx_.chats.get_message(assistantMessageId);
    if (reply.chat_id != chat_id_ || reply.role != store::Role::Assistant || reply.parent_id == 0) {
      emit errorMessage("only a reply to a message can be regenerated");
      return false;
    }
    return replyTo(reply.parent_id);
  } catch (const std::exception& e) {
    fail("could not regenerate the reply", e);
    return false;
  }
}

bool ChatSession::replyTo(std::int64_t userMessageId) {
  const Conversation conv = conversationTo(chat_id_, userMessageId);
  SamplingParams params;
  ContextFit f;
  if (!fitOrRefuse(chat_id_, conv, params, f)) return false;
  return startReply(chat_id_, userMessageId, conv, std::move(f), params);
}

bool ChatSession::regenerateLast() {
  if (chat_id_ == 0 || isGenerating() || !modelReady()) return false;
  try {
    const std::int64_t leaf = ctx_.chats.get_chat(chat_id_).current_leaf;
    if (leaf == 0) return false;
    const store::Message last = ctx_.chats.get_message(leaf);
    if (last.role == store::Role::Assistant) return regenerate(last.id);
    return last.role == store::Role::User && replyTo(last.id);  // a reply that never came
  } catch (const std::exception& e) {
    fail("could not regenerate the reply", e);
    return false;
  }
}

bool ChatSession::editMessage(std::int64_t userMessageId, const QString& text) {
  const QString content = text.trimmed();
  if (content.isEmpty() || chat_id_ == 0 || isGenerating() || !modelReady()) return false;
  try {
    const store::Message original = ctx_.chats.get_message(userMessageId);
    if (original.chat_id != chat_id_ || original.role != store::Role::User) {
      emit errorMessage("only your own messages can be edited");
      return false;
    }
    return askUnder(chat_id_, original.parent_id, content);  // a sibling of the original: a new branch
  } catch (const std::exception& e) {
    fail("could not save the edited message", e);
    return false;
  }
}

bool ChatSession::startReply(std::int64_t chatId, std::int64_t parentId, const Conversation& conv, ContextFit f,
                             const SamplingParams& params) {
  const std::int64_t reply_id = ctx_.chats.add_message(chatId, parentId, store::Role::Assistant, "",
                                                       store::MessageStatus::Streaming);
  if (conversation_.chatId() == chatId) conversation_.sync();
  // Which saved messages the prompt left out: the first droppedMessages after the system prompt.
  std::set<std::int64_t> dropped;
  const size_t first = !conv.messages.empty() && conv.messages.front().role == "system" ? 1 : 0;
  for (size_t i = first; i < first + static_cast<size_t>(f.droppedMessages) && i < conv.ids.size(); ++i)
    dropped.insert(conv.ids[i]);
  if (conversation_.chatId() == chatId) conversation_.setOutOfContext(dropped);

  const QString key = key_for(chatId, reply_id);
  Stream stream;
  stream.chat_id = chatId;
  stream.message_id = reply_id;
  stream.provider = provider_;
  streams_[key] = stream;
  conversation_.beginLive(reply_id);
  last_fit_ = std::move(f);
  provider_->submit(key, last_fit_, params);
  emit generatingChanged(chatId, true);
  emit chatChanged(chatId);
  if (!last_fit_.notice.isEmpty()) emit notice(last_fit_.notice);
  return true;
}

void ChatSession::maybeTitleChat(std::int64_t chatId, const QString& firstMessage) {
  const store::Chat chat = ctx_.chats.get_chat(chatId);
  if (QString::fromStdString(chat.title) != newChatTitle()) return;
  const QString title = excerpt(plainTextOfMarkdown(firstMessage), 48);
  ctx_.chats.rename_chat(chatId, (title.isEmpty() ? newChatTitle() : title).toStdString());
}

void ChatSession::forgetChat(std::int64_t chatId) {
  if (queues_.erase(chatId)) emit queueChanged(chatId);
  bool stopped = false;
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (it->second.chat_id != chatId) {
      ++it;
      continue;
    }
    it->second.provider->stop(it->first);
    conversation_.endLive(it->second.message_id, /*refresh=*/false);
    it = streams_.erase(it);
    stopped = true;
  }
  if (stopped) emit generatingChanged(chatId, false);
}

void ChatSession::stop() {
  // The user wants this chat quiet: what waits is not sent on its own (Send resumes it).
  if (const auto q = queues_.find(chat_id_); q != queues_.end() && !q->second.paused) {
    q->second.paused = true;
    emit queueChanged(chat_id_);
  }
  for (const auto& [key, s] : streams_)
    if (s.chat_id == chat_id_) s.provider->stop(key);
}

bool ChatSession::showSibling(std::int64_t messageId, int delta) {
  if (chat_id_ == 0) return false;
  try {
    const store::Siblings s = ctx_.chats.siblings(messageId);
    const auto target = static_cast<std::ptrdiff_t>(s.index) + delta;
    if (target < 0 || target >= static_cast<std::ptrdiff_t>(s.ids.size())) return false;
    const std::int64_t leaf = ctx_.chats.latest_leaf_under(s.ids[static_cast<size_t>(target)]);
    ctx_.chats.set_current_leaf(chat_id_, leaf);
  } catch (const std::exception& e) {
    fail("could not switch to the other version", e);
    return false;
  }
  conversation_.setOutOfContext({});
  conversation_.sync();
  return true;
}

void ChatSession::onTokens(const QString& key, const QString& text, int numTokens) {
  const auto it = streams_.find(key);
  if (it == streams_.end() || text.isEmpty() || it->second.save_failed) return;
  writer_->append(it->second.message_id, text);  // committed on the writer's thread, in order
  conversation_.appendText(it->second.message_id, text);
}

void ChatSession::onFinished(const QString& key, const GenerationStats& stats) {
  const auto it = streams_.find(key);
  if (it == streams_.end() || it->second.engine_done) return;
  Stream& s = it->second;
  s.engine_done = true;
  s.stats = stats;
  writer_->finish(s.message_id, status_for(stats.finish_reason), stats.toJson());
}

ChatSession::Streams::iterator ChatSession::findStream(std::int64_t messageId) {
  for (auto it = streams_.begin(); it != streams_.end(); ++it)
    if (it->second.message_id == messageId) return it;
  return streams_.end();
}

void ChatSession::onSaved(std::int64_t messageId) {
  const auto it = findStream(messageId);
  if (it == streams_.end()) return;
  const Stream s = it->second;
  streams_.erase(it);
  conversation_.endLive(s.message_id);  // re-read: status and stats as saved
  emit generatingChanged(s.chat_id, false);
  emit chatChanged(s.chat_id);
  emit replyFinished(s.message_id, s.stats);
  if (s.stats.finish_reason == "error")
    emit errorMessage("The reply failed: " + (s.stats.error.isEmpty() ? QString("unknown error") : s.stats.error));
  sendNextQueued(s.chat_id);
}

void ChatSession::onSaveFailed(std::int64_t messageId, const QString& message) {
  const auto it = findStream(messageId);
  if (it == streams_.end()) return;
  if (it->second.engine_done) {
    emit errorMessage("could not save the end of the reply: " + message);
    return;  // onSaved follows
  }
  it->second.save_failed = true;
  it->second.provider->stop(it->first);
  emit errorMessage("could not save the reply, so it was stopped: " + message);
}

}  // namespace inferdesk::gui
