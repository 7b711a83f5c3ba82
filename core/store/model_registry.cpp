// ModelRegistry: the model folders the user has added.
#include <string>

#include "core/store/statement.h"
#include "core/store/store.h"
#include "core/util/error.h"

namespace inferdesk::store {
namespace {

using detail::Statement;

constexpr const char* kSelect =
    "SELECT id, path, display_name, architecture, info_json, added_at, last_loaded_at FROM models ";

ModelEntry read_entry(const Statement& s) {
  ModelEntry e;
  e.id = s.int64(0);
  e.path = s.text(1);
  e.display_name = s.text(2);
  e.architecture = s.text(3);
  e.info_json = s.text(4);
  e.added_at = s.int64(5);
  e.last_loaded_at = s.int64(6);
  return e;
}

[[noreturn]] void unknown_model(std::int64_t id) {
  throw Error(ErrorCode::InvalidArgument, "no model with id " + std::to_string(id) + " in the model list");
}

}  // namespace

std::int64_t ModelRegistry::add(std::string_view path, std::string_view display_name, std::string_view architecture,
                                std::string_view info_json) {
  if (path.empty()) throw Error(ErrorCode::InvalidArgument, "adding a model: the path is empty");
  Database::Transaction tx(db_, "saving a model");
  Statement s(db_,
              "INSERT INTO models(path, display_name, architecture, info_json, added_at) "
              "VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(path) DO UPDATE SET "
              "display_name = excluded.display_name, architecture = excluded.architecture, "
              "info_json = excluded.info_json RETURNING id",
              "saving a model");
  s.bind(1, path).bind(2, display_name).bind(3, architecture).bind(4, info_json);
  s.bind(5, db_.now_ms());
  if (!s.step()) throw Error(ErrorCode::Internal, "saving a model: no id returned");
  const auto id = s.int64(0);
  s.run();
  tx.commit();
  return id;
}

void ModelRegistry::remove(std::int64_t model_id) {
  if (detail::write_one(db_, "removing a model", "DELETE FROM models WHERE id = ?1", model_id) == 0)
    unknown_model(model_id);
}

ModelEntry ModelRegistry::get(std::int64_t model_id) const {
  Statement s(db_, (std::string(kSelect) + "WHERE id = ?1").c_str(), "reading the model list");
  if (!s.bind(1, model_id).step()) unknown_model(model_id);
  return read_entry(s);
}

std::optional<ModelEntry> ModelRegistry::find_by_path(std::string_view path) const {
  Statement s(db_, (std::string(kSelect) + "WHERE path = ?1").c_str(), "reading the model list");
  if (!s.bind(1, path).step()) return std::nullopt;
  return read_entry(s);
}

std::vector<ModelEntry> ModelRegistry::list() const {
  Statement s(db_, (std::string(kSelect) + "ORDER BY last_loaded_at DESC, added_at DESC, id DESC").c_str(),
              "reading the model list");
  std::vector<ModelEntry> out;
  while (s.step()) out.push_back(read_entry(s));
  return out;
}

void ModelRegistry::touch_loaded(std::int64_t model_id) {
  if (detail::write_one(db_, "saving a model's load time", "UPDATE models SET last_loaded_at = ?2 WHERE id = ?1",
                        model_id, db_.now_ms()) == 0)
    unknown_model(model_id);
}

}  // namespace inferdesk::store
