// Parsing of the Hub's API replies. Every reply is untrusted: parsed through parse_untrusted_json
// (depth-checked), fields read only when they have the expected type, and names that will become
// paths on disk (file paths, commit hashes, etags) validated here, so that nothing downstream can
// be steered outside the cache by a hostile server.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/hub/hub_types.h"

namespace inferdesk::hub {

std::vector<ModelSummary> parse_model_list(std::string_view body, const std::string& source);
ModelInfo parse_model_info(std::string_view body, const std::string& source);
// Appends the files of one page of a tree listing.
void parse_tree_page(std::string_view body, const std::string& source, std::vector<RepoFile>& out);

// A relative path inside a repository: no leading '/', no '.' or '..' component, no empty component,
// no backslash or control character, at most 1024 bytes.
bool is_safe_repo_path(std::string_view path);
// 40 lowercase hex digits (a git commit or blob id).
bool is_commit_hash(std::string_view s);
// An ETag usable as a file name in blobs/: 1..128 of [A-Za-z0-9_-].
bool is_safe_etag(std::string_view s);
// "org/name" (or "name"): [A-Za-z0-9_.-], no "--" or "..", at most 96 characters, as
// huggingface_hub's validate_repo_id.
bool is_valid_repo_id(std::string_view id);
// A branch, tag or commit: non-empty, no "..", no control characters or backslashes, no leading '/'.
bool is_valid_revision(std::string_view rev);

// W/"abc" -> abc, "abc" -> abc.
std::string normalize_etag(std::string_view etag);

}  // namespace inferdesk::hub
