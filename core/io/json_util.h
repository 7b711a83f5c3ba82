// JSON helpers for untrusted files: bounded reads, duplicate-key detection, nesting limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace inferdesk {

// Reads a whole file into memory, refusing files larger than `max_bytes`, without blocking on a
// FIFO (core/util/regular_file.h). Throws Error: NotFound (missing), Io (unreadable), Format (not
// a regular file: "<path>: not a regular file (a FIFO)", or larger than max_bytes).
std::string read_file_bounded(const std::filesystem::path& path, size_t max_bytes);

// Parses JSON in linear time. `source` names the input in messages (a file name). Throws
// Error(Format) when the text is not JSON, when an object holds the same key twice
// ("duplicate key \"k\"": nlohmann and Python would silently keep the last one, which hides which
// value the author meant), when containers nest deeper than `max_depth` (the top-level value is
// depth 1), or when an object has more than `max_object_members` members. Every JSON file of a
// model folder is read with it.
nlohmann::json parse_json_strict(std::string_view text, const std::string& source, int max_depth,
                                 size_t max_object_members = SIZE_MAX);

// Parses JSON the way Python's json module does (duplicate keys: the last wins), for JSON that
// is not from a model folder. Throws Error(Format) naming `source`.
nlohmann::json parse_json_lenient(std::string_view text, const std::string& source);

}  // namespace inferdesk
