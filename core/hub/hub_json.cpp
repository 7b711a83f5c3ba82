#include "core/hub/hub_json.h"

#include <cctype>

#include "core/hub/hub_error.h"
#include "core/util/json_guard.h"

namespace inferdesk::hub {

namespace {

using nlohmann::json;

nlohmann::json parse(std::string_view body, const std::string& source) {
  try {
    return parse_untrusted_json(body, source);
  } catch (const Error& e) {
    throw HubError(HubErrorKind::BadResponse, e.what());
  }
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t num(const json& j, const char* key, int64_t fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

bool flag(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

Gated gated_of(const json& j) {
  auto it = j.find("gated");
  if (it == j.end()) return Gated::No;
  if (it->is_boolean()) return it->get<bool>() ? Gated::Auto : Gated::No;
  if (it->is_string()) return it->get<std::string>() == "manual" ? Gated::Manual : Gated::Auto;
  return Gated::No;
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

void read_config(const json& j, std::string& model_type, std::vector<std::string>& architectures) {
  auto c = j.find("config");
  if (c == j.end() || !c->is_object()) return;
  model_type = str(*c, "model_type");
  architectures = strings(*c, "architectures");
}

std::string license_of(const json& j, const std::vector<std::string>& tags) {
  if (auto card = j.find("cardData"); card != j.end() && card->is_object()) {
    const std::string l = str(*card, "license");
    if (!l.empty()) return l;
  }
  for (const auto& t : tags)
    if (t.rfind("license:", 0) == 0) return t.substr(8);
  return "";
}

void read_safetensors(const json& j, ModelInfo& info) {
  auto s = j.find("safetensors");
  if (s == j.end() || !s->is_object()) return;
  info.safetensors_total = num(*s, "total", -1);
  auto p = s->find("parameters");
  if (p == s->end() || !p->is_object()) return;
  for (const auto& [dtype, n] : p->items())
    if (n.is_number_integer()) info.safetensors_params[dtype] = n.get<int64_t>();
}

bool is_hex(std::string_view s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

const char* to_string(Gated g) {
  switch (g) {
    case Gated::No: return "no";
    case Gated::Auto: return "auto";
    case Gated::Manual: return "manual";
  }
  return "no";
}

std::vector<ModelSummary> parse_model_list(std::string_view body, const std::string& source) {
  const json j = parse(body, source);
  if (!j.is_array()) throw HubError(HubErrorKind::BadResponse, source + ": expected a JSON array of models");
  std::vector<ModelSummary> out;
  for (const auto& m : j) {
    if (!m.is_object()) continue;
    ModelSummary s;
    s.id = str(m, "id");
    if (s.id.empty()) s.id = str(m, "modelId");
    if (s.id.empty()) continue;
    s.downloads = num(m, "downloads");
    s.likes = num(m, "likes");
    s.gated = gated_of(m);
    s.is_private = flag(m, "private");
    s.pipeline_tag = str(m, "pipeline_tag");
    s.library_name = str(m, "library_name");
    read_config(m, s.model_type, s.architectures);
    out.push_back(std::move(s));
  }
  return out;
}

ModelInfo parse_model_info(std::string_view body, const std::string& source) {
  const json j = parse(body, source);
  if (!j.is_object()) throw HubError(HubErrorKind::BadResponse, source + ": expected a JSON object");
  ModelInfo info;
  info.id = str(j, "id");
  info.sha = str(j, "sha");
  if (!is_commit_hash(info.sha))
    throw HubError(HubErrorKind::BadResponse, source + ": 'sha' is not a 40-digit commit hash");
  info.gated = gated_of(j);
  info.is_private = flag(j, "private");
  info.disabled = flag(j, "disabled");
  info.downloads = num(j, "downloads");
  info.likes = num(j, "likes");
  info.pipeline_tag = str(j, "pipeline_tag");
  info.library_name = str(j, "library_name");
  info.last_modified = str(j, "lastModified");
  info.tags = strings(j, "tags");
  info.license = license_of(j, info.tags);
  info.used_storage = num(j, "usedStorage", -1);
  read_config(j, info.model_type, info.architectures);
  read_safetensors(j, info);
  if (auto s = j.find("siblings"); s != j.end() && s->is_array())
    for (const auto& f : *s)
      if (f.is_object() && !str(f, "rfilename").empty()) info.siblings.push_back(str(f, "rfilename"));
  return info;
}

void parse_tree_page(std::string_view body, const std::string& source, std::vector<RepoFile>& out) {
  const json j = parse(body, source);
  if (!j.is_array()) throw HubError(HubErrorKind::BadResponse, source + ": expected a JSON array of files");
  for (const auto& e : j) {
    if (!e.is_object() || str(e, "type") != "file") continue;
    RepoFile f;
    f.path = str(e, "path");
    f.oid = str(e, "oid");
    f.size = num(e, "size", -1);
    if (!is_safe_repo_path(f.path))
      throw HubError(HubErrorKind::BadResponse, source + ": unsafe file path '" + f.path + "' in the file list");
    if (f.size < 0 || !is_commit_hash(f.oid))
      throw HubError(HubErrorKind::BadResponse, source + ": '" + f.path + "' has no size or git oid");
    if (auto l = e.find("lfs"); l != e.end() && l->is_object()) {
      LfsInfo lfs{str(*l, "oid"), num(*l, "size", -1)};
      if (!is_hex(lfs.sha256, 64) || lfs.size != f.size)
        throw HubError(HubErrorKind::BadResponse, source + ": '" + f.path + "' has a malformed LFS sha256 or size");
      f.lfs = lfs;
    }
    out.push_back(std::move(f));
  }
}

bool is_safe_repo_path(std::string_view path) {
  if (path.empty() || path.size() > 1024 || path.front() == '/' || path.back() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f || c == '\\') return false;
  return true;
}

bool is_commit_hash(std::string_view s) { return is_hex(s, 40); }

bool is_safe_etag(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_' && c != '-') return false;
  return true;
}

bool is_valid_repo_id(std::string_view id) {
  if (id.empty() || id.size() > 96 || id.find("--") != std::string_view::npos ||
      id.find("..") != std::string_view::npos)
    return false;
  const size_t slash = id.find('/');
  if (slash != std::string_view::npos &&
      (slash == 0 || slash + 1 == id.size() || id.find('/', slash + 1) != std::string_view::npos))
    return false;
  for (unsigned char c : id)
    if (!std::isalnum(c) && c != '_' && c != '.' && c != '-' && c != '/') return false;
  return id.front() != '.' && id.front() != '-' && id.back() != '.' && id.back() != '-';
}

bool is_valid_revision(std::string_view rev) {
  if (rev.empty() || rev.size() > 256 || rev.front() == '/' || rev.back() == '/') return false;
  return is_safe_repo_path(rev);
}

std::string normalize_etag(std::string_view etag) {
  if (etag.rfind("W/", 0) == 0) etag.remove_prefix(2);
  while (!etag.empty() && etag.front() == '"') etag.remove_prefix(1);
  while (!etag.empty() && etag.back() == '"') etag.remove_suffix(1);
  return std::string(etag);
}

}  // namespace inferdesk::hub
