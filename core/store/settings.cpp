// Settings: key/value app settings and named sampling presets.
#include <string>

#include "core/store/statement.h"
#include "core/store/store.h"
#include "core/util/error.h"

namespace inferdesk::store {
namespace {

using detail::Statement;

void require_name(std::string_view name, const char* what) {
  if (name.empty()) throw Error(ErrorCode::InvalidArgument, std::string(what) + ": the name is empty");
}

SamplingPreset read_preset(const Statement& s) { return SamplingPreset{s.text(0), s.text(1), s.int64(2)}; }

}  // namespace

std::optional<std::string> Settings::get(std::string_view key) const {
  Statement s(db_, "SELECT value FROM settings WHERE key = ?1", "reading a setting");
  if (!s.bind(1, key).step()) return std::nullopt;
  return s.text(0);
}

std::string Settings::get_or(std::string_view key, std::string_view fallback) const {
  auto v = get(key);
  return v ? std::move(*v) : std::string(fallback);
}

void Settings::set(std::string_view key, std::string_view value) {
  require_name(key, "saving a setting");
  detail::write_one(db_, "saving a setting",
                    "INSERT INTO settings(key, value) VALUES(?1, ?2) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    key, value);
}

void Settings::remove(std::string_view key) {
  detail::write_one(db_, "removing a setting", "DELETE FROM settings WHERE key = ?1", key);
}

std::vector<SamplingPreset> Settings::list_presets() const {
  Statement s(db_, "SELECT name, json, updated_at FROM sampling_presets ORDER BY name", "reading sampling presets");
  std::vector<SamplingPreset> out;
  while (s.step()) out.push_back(read_preset(s));
  return out;
}

std::optional<SamplingPreset> Settings::get_preset(std::string_view name) const {
  Statement s(db_, "SELECT name, json, updated_at FROM sampling_presets WHERE name = ?1", "reading a sampling preset");
  if (!s.bind(1, name).step()) return std::nullopt;
  return read_preset(s);
}

void Settings::save_preset(std::string_view name, std::string_view json) {
  require_name(name, "saving a sampling preset");
  detail::write_one(db_, "saving a sampling preset",
                    "INSERT INTO sampling_presets(name, json, updated_at) VALUES(?1, ?2, ?3) "
                    "ON CONFLICT(name) DO UPDATE SET json = excluded.json, "
                    "updated_at = excluded.updated_at",
                    name, json, db_.now_ms());
}

void Settings::delete_preset(std::string_view name) {
  detail::write_one(db_, "deleting a sampling preset", "DELETE FROM sampling_presets WHERE name = ?1", name);
}

}  // namespace inferdesk::store
