// Where the Hub lives and where its files go, as huggingface_hub decides it. The environment is read
// once, by read_hub_environment(), at the program's edge (the CLI's command, the GUI's start-up);
// everything below takes the resulting HubEnvironment, so tests pass one of their own and no deep
// code calls getenv.
#pragma once

#include <filesystem>
#include <string>

namespace inferdesk::hub {

inline constexpr const char* kDefaultEndpoint = "https://huggingface.co";

// The standard variables, verbatim ("" when unset). Proxies are not here: libcurl reads
// http_proxy / https_proxy / no_proxy itself.
struct HubEnvironment {
  std::string hf_endpoint;      // HF_ENDPOINT
  std::string hf_token;         // HF_TOKEN
  std::string hf_home;          // HF_HOME
  std::string hf_hub_cache;     // HF_HUB_CACHE
  std::string hf_hub_offline;   // HF_HUB_OFFLINE
  std::string xdg_cache_home;   // XDG_CACHE_HOME
  std::string xdg_config_home;  // XDG_CONFIG_HOME
  std::string home;             // HOME (else the passwd entry)
};

// The one place core/hub reads the process environment.
HubEnvironment read_hub_environment();

// HF_ENDPOINT without a trailing '/', else https://huggingface.co.
std::string resolve_endpoint(const HubEnvironment& env);
// $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface ('~' expanded).
std::filesystem::path resolve_hf_home(const HubEnvironment& env);
// $HF_HUB_CACHE, else $HF_HOME/hub (with HF_HOME's own fallbacks).
std::filesystem::path resolve_cache_dir(const HubEnvironment& env);
// huggingface_hub's token file: $HF_HOME/token.
std::filesystem::path hf_token_file(const HubEnvironment& env);
// InferDesk's own configuration folder: $XDG_CONFIG_HOME/inferdesk, else ~/.config/inferdesk.
std::filesystem::path inferdesk_config_dir(const HubEnvironment& env);
// HF_HUB_OFFLINE set to 1 / ON / YES / TRUE (any case), as huggingface_hub reads it.
bool offline_mode(const HubEnvironment& env);

}  // namespace inferdesk::hub
