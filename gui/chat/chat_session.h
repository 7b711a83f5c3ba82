// ChatSession: what happens when the user sends, stops, regenerates, edits or switches branch —
// the chat page's logic without widgets (ChatPage is its view; tests drive it directly).
//
// Order of events for a reply (the store is always written before the UI shows a change):
//   1. the conversation (system prompt + path + the new user text) is rendered with the model's
//      chat template, tokenized and fitted to the context (context_fit.h); nothing is saved
//      when it cannot fit;
//   2. the user message is committed (store::ChatStore::add_message, durable), then shown;
//   3. an empty assistant message is committed with status Streaming, shown, and the prompt is
//      submitted to the EngineController under the key "chat<chat id>-msg<message id>";
//   4. each batch of text is queued for saving (append_to_message on ReplyWriter's thread, so the
//      UI never waits for the disk) and shown; if saving fails the reply is stopped and the user
//      told;
//   5. on finished the status (complete / stopped / error) and the stats JSON are saved the same
//      way; the reply counts as generating until that is committed.
// Regenerate adds a sibling assistant message under the same user message; editing a user message
// adds a sibling user message (a new branch) and asks for its reply. Replies of several chats may
// stream at once; each chat has at most one.
//
// Messages typed while a chat's reply streams wait in that chat's queue (sendOrQueue), each as
// typed: they are sent one by one, in order, as each reply ends — never merged into one message.
// Stop pauses the queue (nothing more is sent until the user sends again or resumes it); a queued
// message can be removed before it is sent; one that is refused when its turn comes (no model,
// too long) stays first in the paused queue.
//
// Who writes the replies is a ReplyProvider (reply_provider.h): the embedded engine by default,
// or a remote endpoint set with setProvider(). Each reply remembers the provider it was sent to,
// so switching provider never strands a stream.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "core/sample/sampling_params.h"
#include "gui/app/app_context.h"
#include "gui/chat/context_fit.h"
#include "gui/engine/engine_controller.h"

namespace inferdesk::gui {

class ConversationModel;
class ReplyProvider;
class ReplyWriter;

class ChatSession : public QObject {
  Q_OBJECT

 public:
  ChatSession(AppContext& ctx, ConversationModel& conversation, QObject* parent = nullptr);
  // Stops this session's replies and saves them as stopped.
  ~ChatSession() override;

  // The chat the conversation model shows (0: none).
  void setChat(std::int64_t chatId);
  std::int64_t chatId() const { return chat_id_; }
  bool isGenerating(std::int64_t chatId) const;
  bool isGenerating() const { return isGenerating(chat_id_); }
  // The message id of the reply streaming in this chat (0: none).
  std::int64_t streamingMessage(std::int64_t chatId) const;

  // Each returns true when a reply was requested; false (with errorMessage or modelNeeded
  // emitted, and nothing saved) when it was refused.
  bool send(const QString& text);
  // Sends now, or queues behind the reply streaming in this chat (or behind a paused queue, which
  // then resumes). False only when refused (empty text, no chat); nothing is queued then.
  bool sendOrQueue(const QString& text);
  // Messages waiting in a chat's queue, oldest first.
  QStringList queued(std::int64_t chatId) const;
  bool isQueuePaused(std::int64_t chatId) const;
  // Removes a waiting message (index into queued()); false when there is none there.
  bool removeQueued(std::int64_t chatId, int index);
  // Sends the next waiting message of the shown chat when no reply streams there.
  void resumeQueue();
  bool regenerate(std::int64_t assistantMessageId);
  // Regenerates the last reply of the branch shown (or asks for one when it ends with the user's
  // message); false when there is nothing to regenerate.
  bool regenerateLast();
  bool editMessage(std::int64_t userMessageId, const QString& text);
  // Stops the current chat's reply (the text so far is kept, marked stopped).
  void stop();
  // Before a chat is deleted: stops its reply and forgets it (nothing more is saved for it).
  void forgetChat(std::int64_t chatId);
  // Shows the sibling `delta` places away (-1 / +1) of a message, and the newest branch under it.
  bool showSibling(std::int64_t messageId, int delta);

  // The prompt for the current conversation as it would be sent now (for "show the rendered
  // prompt"); ok == false with error when no model is loaded or it cannot fit.
  ContextFit currentPrompt() const;
  // The fit of the last request (what was sent, what was left out).
  const ContextFit& lastFit() const { return last_fit_; }

  // The provider of replies sent from now on; null: the embedded engine. Not owned (the caller
  // keeps it alive while replies it serves stream, and calls setProvider(nullptr) before
  // deleting it).
  void setProvider(ReplyProvider* provider);
  ReplyProvider* provider() const { return provider_; }

  // Waits until the streamed text queued so far is in the store (before reading it there).
  void flushWrites();

  // The title a new chat gets; the first message renames a chat that still has it.
  static QString newChatTitle() { return QStringLiteral("New chat"); }

 signals:
  void notice(const QString& text);        // information for the user (e.g. turns left out)
  void errorMessage(const QString& text);  // a refusal or a failure
  void modelNeeded();                      // sending without a loaded model
  void generatingChanged(std::int64_t chatId, bool generating);
  void chatChanged(std::int64_t chatId);  // saved something (title, messages): list order
  void replyFinished(std::int64_t messageId, const inferdesk::gui::GenerationStats& stats);
  void queueChanged(std::int64_t chatId);

 private:
  struct Stream {
    std::int64_t chat_id = 0;
    std::int64_t message_id = 0;
    bool save_failed = false;
    bool engine_done = false;  // finished arrived; its save is queued
    GenerationStats stats;
    ReplyProvider* provider = nullptr;
  };
  using Streams = std::map<QString, Stream>;  // by request key
  struct Conversation {
    std::vector<PromptMessage> messages;
    std::vector<std::int64_t> ids;  // per message; 0 for the system prompt and unsaved text
  };
  Conversation conversationTo(std::int64_t chatId, std::int64_t leafId) const;  // throws Error
  struct Queue {
    std::deque<QString> texts;
    bool paused = false;
  };
  bool modelReady();
  ContextFit fit(const Conversation& conv, const SamplingParams& params) const;
  // Reads the chat's sampling settings and fits `conv`; false (errorMessage emitted) when it
  // cannot fit. Throws Error when the store cannot be read.
  bool fitOrRefuse(std::int64_t chatId, const Conversation& conv, SamplingParams& params, ContextFit& f);
  // Saves a user message under parentId (0: a new root) once the conversation fits, shows it,
  // and asks for its reply.
  bool askUnder(std::int64_t chatId, std::int64_t parentId, const QString& content);
  // Asks for a reply to a saved user message of the shown chat (a sibling of any reply it has).
  bool replyTo(std::int64_t userMessageId);
  // Sends a message to a chat (shown or not) under its current leaf.
  bool sendTo(std::int64_t chatId, const QString& content);
  // Sends the chat's next queued message if no reply streams there and the queue runs.
  void sendNextQueued(std::int64_t chatId);
  bool startReply(std::int64_t chatId, std::int64_t parentId, const Conversation& conv, ContextFit fit,
                  const SamplingParams& params);
  void maybeTitleChat(std::int64_t chatId, const QString& firstMessage);
  void onTokens(const QString& key, const QString& text, int numTokens);
  void onFinished(const QString& key, const inferdesk::gui::GenerationStats& stats);
  void onSaved(std::int64_t messageId);
  void onSaveFailed(std::int64_t messageId, const QString& message);
  Streams::iterator findStream(std::int64_t messageId);
  void fail(const QString& what, const std::exception& e);

  AppContext& ctx_;
  ConversationModel& conversation_;
  std::int64_t chat_id_ = 0;
  ReplyWriter* writer_ = nullptr;  // child
  ReplyProvider* engine_provider_ = nullptr;  // child: the embedded engine
  ReplyProvider* provider_ = nullptr;         // engine_provider_ or the caller's
  Streams streams_;
  std::map<std::int64_t, Queue> queues_;  // by chat
  ContextFit last_fit_;
};

}  // namespace inferdesk::gui
