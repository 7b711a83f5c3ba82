#include "core/hub/hub_env.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

namespace inferdesk::hub {

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// HOME, else the passwd entry: a service started without HOME still finds the user's cache.
std::string home_dir() {
  std::string home = env_or_empty("HOME");
  if (!home.empty()) return home;
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd pw{};
  passwd* result = nullptr;
  if (getpwuid_r(getuid(), &pw, buf.data(), buf.size(), &result) == 0 && result && result->pw_dir)
    return result->pw_dir;
  return "/";
}

std::filesystem::path expand_user(const std::string& path, const HubEnvironment& env) {
  if (path == "~") return env.home;
  if (path.rfind("~/", 0) == 0) return std::filesystem::path(env.home) / path.substr(2);
  return path;
}

}  // namespace

HubEnvironment read_hub_environment() {
  HubEnvironment e;
  e.hf_endpoint = env_or_empty("HF_ENDPOINT");
  e.hf_token = env_or_empty("HF_TOKEN");
  e.hf_home = env_or_empty("HF_HOME");
  e.hf_hub_cache = env_or_empty("HF_HUB_CACHE");
  e.hf_hub_offline = env_or_empty("HF_HUB_OFFLINE");
  e.xdg_cache_home = env_or_empty("XDG_CACHE_HOME");
  e.xdg_config_home = env_or_empty("XDG_CONFIG_HOME");
  e.home = home_dir();
  return e;
}

std::string resolve_endpoint(const HubEnvironment& env) {
  std::string e = env.hf_endpoint.empty() ? kDefaultEndpoint : env.hf_endpoint;
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::filesystem::path resolve_hf_home(const HubEnvironment& env) {
  if (!env.hf_home.empty()) return expand_user(env.hf_home, env);
  const std::filesystem::path cache = env.xdg_cache_home.empty() ? std::filesystem::path(env.home) / ".cache"
                                                                 : expand_user(env.xdg_cache_home, env);
  return cache / "huggingface";
}

std::filesystem::path resolve_cache_dir(const HubEnvironment& env) {
  if (!env.hf_hub_cache.empty()) return expand_user(env.hf_hub_cache, env);
  return resolve_hf_home(env) / "hub";
}

std::filesystem::path hf_token_file(const HubEnvironment& env) { return resolve_hf_home(env) / "token"; }

std::filesystem::path inferdesk_config_dir(const HubEnvironment& env) {
  const std::filesystem::path base = env.xdg_config_home.empty() ? std::filesystem::path(env.home) / ".config"
                                                                 : expand_user(env.xdg_config_home, env);
  return base / "inferdesk";
}

bool offline_mode(const HubEnvironment& env) {
  std::string v = env.hf_hub_offline;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

}  // namespace inferdesk::hub
