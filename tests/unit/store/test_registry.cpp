// core/store: the model registry, app settings and sampling presets.
#include <vector>

#include "tests/unit/store/store_test_util.h"

namespace inferdesk::store {
namespace {

using testing::error_of;
using testing::TempDir;

class Registry : public ::testing::Test {
 protected:
  TempDir dir;
  Database db{dir / "app.db", testing::ticking_clock()};
  ModelRegistry models{db};
  Settings settings{db};
};

TEST_F(Registry, ReAddingAPathUpdatesTheEntryAndKeepsItsId) {
  const auto id = models.add("/models/qwen", "Qwen", "qwen3", R"({"params":1})");
  const ModelEntry first = models.get(id);
  const auto again = models.add("/models/qwen", "Qwen 3 0.6B", "qwen3", R"({"params":2})");
  EXPECT_EQ(again, id);
  const ModelEntry e = models.get(id);
  EXPECT_EQ(e.display_name, "Qwen 3 0.6B");
  EXPECT_EQ(e.info_json, R"({"params":2})");
  EXPECT_EQ(e.added_at, first.added_at);
  EXPECT_EQ(e.last_loaded_at, 0);
  EXPECT_EQ(models.list().size(), 1u);
  ASSERT_TRUE(models.find_by_path("/models/qwen").has_value());
  EXPECT_EQ(models.find_by_path("/models/qwen")->id, id);
  EXPECT_FALSE(models.find_by_path("/models/other").has_value());
  EXPECT_EQ(error_of([&] { models.add("", "x"); }).code(), ErrorCode::InvalidArgument);
}

TEST_F(Registry, ListIsMostRecentlyLoadedThenMostRecentlyAdded) {
  const auto a = models.add("/m/a", "A");
  const auto b = models.add("/m/b", "B");
  const auto c = models.add("/m/c", "C");
  auto order = [&] {
    std::vector<std::int64_t> ids;
    for (const auto& e : models.list()) ids.push_back(e.id);
    return ids;
  };
  EXPECT_EQ(order(), (std::vector<std::int64_t>{c, b, a}));
  models.touch_loaded(a);
  EXPECT_EQ(order(), (std::vector<std::int64_t>{a, c, b}));
  EXPECT_GT(models.get(a).last_loaded_at, models.get(a).added_at);
  EXPECT_EQ(error_of([&] { models.touch_loaded(999); }).code(), ErrorCode::InvalidArgument);
}

TEST_F(Registry, RemovingAModelUnsetsItInChatsAndKeepsTheirMessages) {
  ChatStore chats(db);
  const auto model = models.add("/m/a", "A");
  const auto chat = chats.create_chat("c", "", "{}", model);
  const auto msg = chats.add_message(chat, 0, Role::User, "q");
  EXPECT_EQ(chats.get_chat(chat).model_id, model);
  models.remove(model);
  EXPECT_FALSE(chats.get_chat(chat).model_id.has_value());
  EXPECT_EQ(chats.get_message(msg).content, "q");
  EXPECT_EQ(error_of([&] { models.remove(model); }).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(error_of([&] { models.get(model); }).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(error_of([&] { chats.create_chat("d", "", "{}", model); }).code(), ErrorCode::InvalidArgument);
  const auto other = models.add("/m/b", "B");
  chats.set_chat_model(chat, other);
  EXPECT_EQ(chats.get_chat(chat).model_id, other);
  chats.set_chat_model(chat, std::nullopt);
  EXPECT_FALSE(chats.get_chat(chat).model_id.has_value());
}

TEST_F(Registry, SettingsAreStringsByKey) {
  EXPECT_FALSE(settings.get("theme").has_value());
  EXPECT_EQ(settings.get_or("theme", "light"), "light");
  settings.set("theme", "dark");
  settings.set("theme", "solarized");
  EXPECT_EQ(settings.get("theme"), "solarized");
  settings.set("empty", "");
  EXPECT_EQ(settings.get("empty"), "");  // an empty value is a value, not a missing key
  settings.remove("theme");
  EXPECT_FALSE(settings.get("theme").has_value());
  settings.remove("never-set");  // removing nothing is fine
  EXPECT_EQ(error_of([&] { settings.set("", "x"); }).code(), ErrorCode::InvalidArgument);
}

TEST_F(Registry, SamplingPresetsAreNamedJsonBlobs) {
  settings.save_preset("precise", R"({"temperature":0})");
  settings.save_preset("creative", R"({"temperature":1.2})");
  settings.save_preset("precise", R"({"temperature":0.1})");
  const auto all = settings.list_presets();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "creative");
  EXPECT_EQ(all[1].name, "precise");
  EXPECT_EQ(all[1].json, R"({"temperature":0.1})");
  EXPECT_GT(all[1].updated_at, all[0].updated_at);
  ASSERT_TRUE(settings.get_preset("creative").has_value());
  settings.delete_preset("creative");
  EXPECT_FALSE(settings.get_preset("creative").has_value());
  EXPECT_EQ(settings.list_presets().size(), 1u);
  EXPECT_EQ(error_of([&] { settings.save_preset("", "{}"); }).code(), ErrorCode::InvalidArgument);
}

}  // namespace
}  // namespace inferdesk::store
