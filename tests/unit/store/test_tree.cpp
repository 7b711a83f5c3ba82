// core/store: chats as message trees — branches by edit and regenerate, sibling navigation,
// paths, cascading deletes, search, transactions.
#include <algorithm>
#include <vector>

#include "tests/unit/store/store_test_util.h"

namespace inferdesk::store {
namespace {

using testing::error_of;
using testing::TempDir;

std::vector<std::int64_t> ids_of(const std::vector<Message>& ms) {
  std::vector<std::int64_t> out;
  for (const auto& m : ms) out.push_back(m.id);
  return out;
}

std::vector<std::int64_t> ids_of(const std::vector<Chat>& cs) {
  std::vector<std::int64_t> out;
  for (const auto& c : cs) out.push_back(c.id);
  return out;
}

class ChatTree : public ::testing::Test {
 protected:
  TempDir dir;
  Database db{dir / "chats.db", testing::ticking_clock()};
  ChatStore chats{db};
};

TEST_F(ChatTree, NewChatRoundTripsItsFields) {
  const auto id = chats.create_chat("Physics", "Be brief.", R"({"temperature":0.7})");
  const Chat c = chats.get_chat(id);
  EXPECT_EQ(c.title, "Physics");
  EXPECT_EQ(c.system_prompt, "Be brief.");
  EXPECT_EQ(c.sampling_json, R"({"temperature":0.7})");
  EXPECT_FALSE(c.model_id.has_value());
  EXPECT_EQ(c.current_leaf, 0);
  EXPECT_GT(c.created_at, 0);
  EXPECT_EQ(c.created_at, c.updated_at);

  chats.rename_chat(id, "Optics");
  chats.set_system_prompt(id, "");
  chats.set_sampling_json(id, "{}");
  const Chat d = chats.get_chat(id);
  EXPECT_EQ(d.title, "Optics");
  EXPECT_EQ(d.system_prompt, "");
  EXPECT_EQ(d.sampling_json, "{}");
  EXPECT_GT(d.updated_at, c.updated_at);
}

TEST_F(ChatTree, AddMessageMovesTheCurrentLeafAndPathRunsRootToLeaf) {
  const auto chat = chats.create_chat("c");
  const auto u1 = chats.add_message(chat, 0, Role::User, "hi");
  const auto a1 = chats.add_message(chat, u1, Role::Assistant, "hello");
  const auto u2 = chats.add_message(chat, a1, Role::User, "why?");
  EXPECT_EQ(chats.get_chat(chat).current_leaf, u2);
  const auto path = chats.path_to(u2);
  ASSERT_EQ(ids_of(path), (std::vector<std::int64_t>{u1, a1, u2}));
  EXPECT_EQ(path[0].role, Role::User);
  EXPECT_EQ(path[1].role, Role::Assistant);
  EXPECT_EQ(path[1].content, "hello");
  EXPECT_EQ(path[1].parent_id, u1);
  EXPECT_EQ(path[0].parent_id, 0);
  EXPECT_EQ(path[2].status, MessageStatus::Complete);
}

TEST_F(ChatTree, EditingAUserMessageStartsABranchBesideIt) {
  const auto chat = chats.create_chat("c");
  const auto u1 = chats.add_message(chat, 0, Role::User, "q1");
  const auto a1 = chats.add_message(chat, u1, Role::Assistant, "r1");
  const auto u2 = chats.add_message(chat, a1, Role::User, "q2");
  const auto a2 = chats.add_message(chat, u2, Role::Assistant, "r2");
  // Edit u2: a new user message with the same parent.
  const auto u2b = chats.add_message(chat, a1, Role::User, "q2, better");
  const auto a2b = chats.add_message(chat, u2b, Role::Assistant, "r2b");

  const Siblings s = chats.siblings(u2b);
  EXPECT_EQ(s.ids, (std::vector<std::int64_t>{u2, u2b}));
  EXPECT_EQ(s.index, 1u);
  EXPECT_EQ(chats.siblings(u2).index, 0u);
  EXPECT_EQ(ids_of(chats.path_to(a2b)), (std::vector<std::int64_t>{u1, a1, u2b, a2b}));
  // The old branch is intact.
  EXPECT_EQ(ids_of(chats.path_to(a2)), (std::vector<std::int64_t>{u1, a1, u2, a2}));
  EXPECT_EQ(ids_of(chats.children(a1)), (std::vector<std::int64_t>{u2, u2b}));
  EXPECT_EQ(chats.get_chat(chat).current_leaf, a2b);
}

TEST_F(ChatTree, RegenerateAddsASiblingReplyAndStreamsIntoIt) {
  const auto chat = chats.create_chat("c");
  const auto u1 = chats.add_message(chat, 0, Role::User, "q");
  const auto a1 = chats.add_message(chat, u1, Role::Assistant, "first answer");
  const auto a1b = chats.add_message(chat, u1, Role::Assistant, "", MessageStatus::Streaming);
  chats.append_to_message(a1b, "second ");
  chats.append_to_message(a1b, "answer");
  EXPECT_EQ(chats.get_message(a1b).status, MessageStatus::Streaming);
  chats.finish_message(a1b, MessageStatus::Stopped, R"({"tokens":2})");

  const Message m = chats.get_message(a1b);
  EXPECT_EQ(m.content, "second answer");
  EXPECT_EQ(m.status, MessageStatus::Stopped);
  EXPECT_EQ(m.stats_json, R"({"tokens":2})");
  EXPECT_EQ(chats.siblings(a1).ids, (std::vector<std::int64_t>{a1, a1b}));
  // A finished message takes no more chunks.
  EXPECT_EQ(error_of([&] { chats.append_to_message(a1b, "x"); }).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(chats.get_message(a1b).content, "second answer");
}

TEST_F(ChatTree, SwitchingBranchFollowsTheMostRecentChildDown) {
  const auto chat = chats.create_chat("c");
  const auto u1 = chats.add_message(chat, 0, Role::User, "q1");
  const auto a1 = chats.add_message(chat, u1, Role::Assistant, "r1");
  const auto u2 = chats.add_message(chat, a1, Role::User, "q2");
  const auto a2 = chats.add_message(chat, u2, Role::Assistant, "r2");
  const auto a2b = chats.add_message(chat, u2, Role::Assistant, "r2b");  // regenerated
  const auto u2b = chats.add_message(chat, a1, Role::User, "q2b");       // edited
  const auto a2c = chats.add_message(chat, u2b, Role::Assistant, "r2c");
  const auto before = chats.get_chat(chat).updated_at;

  // The UI shows u2b; the user steps back to sibling u2: its newest reply is a2b.
  EXPECT_EQ(chats.latest_leaf_under(u2), a2b);
  chats.set_current_leaf(chat, chats.latest_leaf_under(u2));
  EXPECT_EQ(chats.get_chat(chat).current_leaf, a2b);
  EXPECT_EQ(chats.get_chat(chat).updated_at, before);  // navigation is not an edit
  EXPECT_EQ(chats.latest_leaf_under(u1), a2c);         // newest child at each level
  EXPECT_EQ(chats.latest_leaf_under(a2), a2);          // a leaf is its own latest leaf
  chats.set_current_leaf(chat, 0);
  EXPECT_EQ(chats.get_chat(chat).current_leaf, 0);
}

TEST_F(ChatTree, RootMessagesAreSiblingsOfEachOther) {
  const auto chat = chats.create_chat("c");
  const auto other = chats.create_chat("other");
  const auto r1 = chats.add_message(chat, 0, Role::System, "sys");
  const auto r2 = chats.add_message(chat, 0, Role::User, "edited first message");
  chats.add_message(other, 0, Role::User, "not mine");
  EXPECT_EQ(ids_of(chats.roots(chat)), (std::vector<std::int64_t>{r1, r2}));
  const Siblings s = chats.siblings(r2);
  EXPECT_EQ(s.ids, (std::vector<std::int64_t>{r1, r2}));
  EXPECT_EQ(s.index, 1u);
  EXPECT_EQ(chats.path_to(r2).size(), 1u);
}

TEST_F(ChatTree, UnknownIdsAndForeignParentsAreInvalidArguments) {
  const auto chat = chats.create_chat("c");
  const auto other = chats.create_chat("d");
  const auto m = chats.add_message(other, 0, Role::User, "x");
  auto code = [](auto fn) { return error_of(fn).code(); };
  EXPECT_EQ(code([&] { chats.add_message(chat, m, Role::User, "y"); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.add_message(999, 0, Role::User, "y"); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.add_message(chat, 999, Role::User, "y"); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.get_chat(999); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.get_message(999); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.rename_chat(999, "t"); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.delete_chat(999); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.append_to_message(999, "t"); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.finish_message(999, MessageStatus::Complete); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.set_current_leaf(chat, m); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.set_chat_model(chat, 42); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { chats.children(999); }), ErrorCode::InvalidArgument);
  // Nothing half-done was left behind by the refused calls.
  EXPECT_TRUE(chats.roots(chat).empty());
  EXPECT_EQ(chats.get_chat(chat).current_leaf, 0);
}

TEST_F(ChatTree, DeletingAChatDeletesItsWholeTreeOnly) {
  const auto chat = chats.create_chat("doomed");
  const auto keep = chats.create_chat("kept");
  const auto u = chats.add_message(chat, 0, Role::User, "q");
  const auto a = chats.add_message(chat, u, Role::Assistant, "r");
  const auto k = chats.add_message(keep, 0, Role::User, "stay");
  chats.delete_chat(chat);
  EXPECT_EQ(error_of([&] { chats.get_message(a); }).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(error_of([&] { chats.get_chat(chat); }).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(testing::query_text(db, "SELECT count(*) FROM messages"), "1");
  EXPECT_EQ(chats.get_message(k).content, "stay");
  EXPECT_EQ(ids_of(chats.list_chats()), (std::vector<std::int64_t>{keep}));
}

TEST_F(ChatTree, ListIsMostRecentlyUpdatedFirst) {
  const auto a = chats.create_chat("a");
  const auto b = chats.create_chat("b");
  const auto c = chats.create_chat("c");
  EXPECT_EQ(ids_of(chats.list_chats()), (std::vector<std::int64_t>{c, b, a}));
  chats.add_message(a, 0, Role::User, "bump");
  EXPECT_EQ(ids_of(chats.list_chats()), (std::vector<std::int64_t>{a, c, b}));
  chats.rename_chat(b, "b2");
  EXPECT_EQ(ids_of(chats.list_chats()), (std::vector<std::int64_t>{b, a, c}));
}

TEST_F(ChatTree, LastMessageTimeMovesOnlyWithMessages) {
  const auto chat = chats.create_chat("c");
  EXPECT_EQ(chats.get_chat(chat).last_message_at, 0);
  const auto u = chats.add_message(chat, 0, Role::User, "hi");
  const std::int64_t first = chats.get_chat(chat).last_message_at;
  EXPECT_EQ(first, chats.get_message(u).created_at);
  chats.set_sampling_json(chat, R"({"temperature":0.1})");
  chats.rename_chat(chat, "renamed");
  EXPECT_EQ(chats.get_chat(chat).last_message_at, first);  // settings are not messages
  EXPECT_GT(chats.get_chat(chat).updated_at, first);
  const auto a = chats.add_message(chat, u, Role::Assistant, "hello");
  EXPECT_EQ(chats.list_chats().at(0).last_message_at, chats.get_message(a).created_at);
  EXPECT_EQ(chats.search_chats("hello").at(0).last_message_at, chats.get_message(a).created_at);
}

TEST_F(ChatTree, InsertChatKeepsTheWholeTreeWithItsTimes) {
  Chat c;
  c.title = "Imported";
  c.system_prompt = "Be brief.";
  c.sampling_json = R"({"temperature":0.2})";
  c.created_at = 1000;
  c.updated_at = 5000;
  c.current_leaf = 40;  // the caller's numbering
  auto msg = [](std::int64_t id, std::int64_t parent, Role r, const char* text, std::int64_t t) {
    Message m;
    m.id = id;
    m.parent_id = parent;
    m.role = r;
    m.content = text;
    m.created_at = t;
    return m;
  };
  std::vector<Message> ms = {msg(10, 0, Role::User, "q", 1100), msg(20, 10, Role::Assistant, "a1", 1200),
                             msg(30, 10, Role::Assistant, "a2", 1300), msg(40, 30, Role::User, "q2", 1400)};
  ms[1].status = MessageStatus::Stopped;
  ms[1].stats_json = R"({"tokens":3})";
  const auto id = chats.insert_chat(c, ms);
  const Chat got = chats.get_chat(id);
  EXPECT_EQ(got.title, "Imported");
  EXPECT_EQ(got.system_prompt, "Be brief.");
  EXPECT_EQ(got.sampling_json, R"({"temperature":0.2})");
  EXPECT_EQ(got.created_at, 1000);
  EXPECT_EQ(got.updated_at, 5000);
  EXPECT_EQ(got.last_message_at, 1400);
  const auto path = chats.path_to(got.current_leaf);
  ASSERT_EQ(path.size(), 3u);
  EXPECT_EQ(path[0].content, "q");
  EXPECT_EQ(path[1].content, "a2");
  EXPECT_EQ(path[2].content, "q2");
  const auto replies = chats.children(path[0].id);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].content, "a1");
  EXPECT_EQ(replies[0].status, MessageStatus::Stopped);
  EXPECT_EQ(replies[0].stats_json, R"({"tokens":3})");
  EXPECT_EQ(replies[0].created_at, 1200);
}

TEST_F(ChatTree, InsertChatRefusesABrokenTreeAndWritesNothing) {
  Chat c;
  c.title = "bad";
  Message orphan;
  orphan.id = 2;
  orphan.parent_id = 1;  // never listed
  EXPECT_EQ(error_of([&] { chats.insert_chat(c, {orphan}); }).code(), ErrorCode::InvalidArgument);
  Message m;
  m.id = 1;
  EXPECT_EQ(error_of([&] { chats.insert_chat(c, {m, m}); }).code(), ErrorCode::InvalidArgument);
  c.current_leaf = 9;
  EXPECT_EQ(error_of([&] { chats.insert_chat(c, {m}); }).code(), ErrorCode::InvalidArgument);
  EXPECT_TRUE(chats.list_chats().empty());
}

TEST_F(ChatTree, SearchMatchesTitlesAndMessagesWithLiteralWildcards) {
  const auto pct = chats.create_chat("100% sure");
  const auto plain = chats.create_chat("1000 reasons");
  const auto under = chats.create_chat("misc");
  chats.add_message(under, 0, Role::User, "rename my_file please");
  const auto x = chats.create_chat("other");
  chats.add_message(x, 0, Role::User, "rename myXfile please");
  const auto slash = chats.create_chat("paths");
  chats.add_message(slash, 0, Role::Assistant, R"(C:\temp)");

  EXPECT_EQ(ids_of(chats.search_chats("100%")), (std::vector<std::int64_t>{pct}));
  EXPECT_EQ(ids_of(chats.search_chats("my_file")), (std::vector<std::int64_t>{under}));
  EXPECT_EQ(ids_of(chats.search_chats(R"(:\t)")), (std::vector<std::int64_t>{slash}));
  EXPECT_EQ(ids_of(chats.search_chats("MYXFILE")), (std::vector<std::int64_t>{x}));  // any case
  EXPECT_EQ(ids_of(chats.search_chats("100")), (std::vector<std::int64_t>{plain, pct}));
  EXPECT_TRUE(chats.search_chats("%%").empty());
  EXPECT_EQ(chats.search_chats("").size(), 5u);
  EXPECT_EQ(error_of([&] { chats.search_chats(std::string(20000, '%')); }).code(), ErrorCode::InvalidArgument);
}

TEST_F(ChatTree, InterruptedStreamsBecomeStopped) {
  const auto chat = chats.create_chat("c");
  const auto u = chats.add_message(chat, 0, Role::User, "q");
  const auto a = chats.add_message(chat, u, Role::Assistant, "partial", MessageStatus::Streaming);
  EXPECT_EQ(chats.mark_interrupted_streams(), 1);
  EXPECT_EQ(chats.get_message(a).status, MessageStatus::Stopped);
  EXPECT_EQ(chats.get_message(a).content, "partial");
  EXPECT_EQ(chats.mark_interrupted_streams(), 0);
}

TEST_F(ChatTree, AnUncommittedTransactionLeavesNothingAndNestingWorks) {
  {
    Database::Transaction tx(db);
    const auto chat = chats.create_chat("inside");
    chats.add_message(chat, 0, Role::User, "q");
  }  // not committed
  EXPECT_TRUE(chats.list_chats().empty());
  {
    Database::Transaction outer(db);
    chats.create_chat("kept");
    {
      Database::Transaction inner(db);
      chats.create_chat("dropped");
    }
    outer.commit();
  }
  const auto all = chats.list_chats();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].title, "kept");
}

TEST_F(ChatTree, ACycleOfParentsInTheFileIsAFormatErrorNotAHang) {
  const auto chat = chats.create_chat("c");
  const auto u = chats.add_message(chat, 0, Role::User, "q");
  const auto a = chats.add_message(chat, u, Role::Assistant, "r");
  db.exec("UPDATE messages SET parent_id = " + std::to_string(a) + " WHERE id = " + std::to_string(u));
  EXPECT_EQ(error_of([&] { chats.path_to(a); }).code(), ErrorCode::Format);
  EXPECT_EQ(error_of([&] { chats.latest_leaf_under(a); }).code(), ErrorCode::Format);
}

TEST_F(ChatTree, AnUnknownRoleInTheFileIsAFormatError) {
  const auto chat = chats.create_chat("c");
  const auto u = chats.add_message(chat, 0, Role::User, "q");
  db.exec("PRAGMA ignore_check_constraints = ON; UPDATE messages SET role = 'wizard'");
  const Error e = error_of([&] { chats.get_message(u); });
  EXPECT_EQ(e.code(), ErrorCode::Format);
  EXPECT_TRUE(testing::contains(e.what(), "wizard")) << e.what();
}

TEST(StoreEnums, RoundTripAndRejectUnknownText) {
  for (Role r : {Role::System, Role::User, Role::Assistant}) EXPECT_EQ(parse_role(to_string(r)), r);
  for (auto s : {MessageStatus::Complete, MessageStatus::Streaming, MessageStatus::Stopped, MessageStatus::Error})
    EXPECT_EQ(parse_message_status(to_string(s)), s);
  EXPECT_EQ(testing::error_of([] { parse_role("User"); }).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(testing::error_of([] { parse_message_status(""); }).code(), ErrorCode::InvalidArgument);
}

}  // namespace
}  // namespace inferdesk::store
