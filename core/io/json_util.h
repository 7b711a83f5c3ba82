// JSON helpers for untrusted files: bounded reads, duplicate-key detection, nesting limits.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace inferdesk {

// Reads a whole file into memory, refusing files larger than `max_bytes`.
// Throws Error: NotFound (missing), Io (unreadable), Format (larger than max_bytes).
std::string read_file_bounded(const std::filesystem::path& path, size_t max_bytes);

// Parses JSON. `source` names the input in messages (a file name). Throws Error(Format) when the
// text is not JSON, when an object holds the same key twice (nlohmann would silently keep the
// last one, which hides ambiguity in a tensor index or header), or when containers nest deeper
// than `max_depth` (the top-level value is depth 1).
nlohmann::json parse_json_strict(std::string_view text, const std::string& source, int max_depth);

// Parses JSON the way Python's json module does (duplicate keys: the last wins), for files such
// as config.json that other tools read that way. Throws Error(Format) naming `source`.
nlohmann::json parse_json_lenient(std::string_view text, const std::string& source);

}  // namespace inferdesk
