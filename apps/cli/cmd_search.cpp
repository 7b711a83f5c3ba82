// inferdesk-cli search: text-generation models on the Hugging Face Hub, most downloaded first, and
// whether InferDesk runs their architecture.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/cli/commands.h"
#include "core/hub/hub_client.h"
#include "core/hub/token_store.h"
#include "core/model/model.h"

namespace inferdesk::cli {

namespace {

struct SearchArgs {
  std::string text;
  int limit = 20;
  bool json = false;
  std::string token;
};

// 1234567 -> "1,234,567".
std::string grouped(int64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    const size_t left = digits.size() - i;
    if (i > 0 && left % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

// "yes" / "no" for a known model_type, "?" when the Hub did not say.
std::string supported(const hub::ModelSummary& m) {
  if (m.model_type.empty()) return "?";
  const auto types = supported_model_types();
  return std::find(types.begin(), types.end(), m.model_type) != types.end() ? "yes" : "no";
}

void run_search(const SearchArgs& a) {
  if (a.limit < 1 || a.limit > 1000) throw Error(ErrorCode::InvalidArgument, "--limit must be 1..1000");
  const hub::HubEnvironment env = hub::read_hub_environment();
  if (hub::offline_mode(env))
    throw hub::HubError(hub::HubErrorKind::Offline, "HF_HUB_OFFLINE is set: searching needs the Hub");
  hub::HubClientOptions options;
  options.endpoint = hub::resolve_endpoint(env);
  options.token = hub::resolve_token(env, a.token, nullptr).token;
  options.http.user_agent = "inferdesk-cli";
  const hub::HubClient client(options);
  const auto models = client.search(hub::SearchQuery{a.text, a.limit});
  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : models)
      out.push_back({{"id", m.id},
                     {"downloads", m.downloads},
                     {"likes", m.likes},
                     {"gated", hub::to_string(m.gated)},
                     {"model_type", m.model_type},
                     {"architectures", m.architectures},
                     {"supported", supported(m)}});
    std::cout << out.dump() << std::endl;
    return;
  }
  if (models.empty()) {
    std::fprintf(stderr, "no text-generation model matches '%s'\n", a.text.c_str());
    return;
  }
  size_t width = 5;
  for (const auto& m : models) width = std::max(width, m.id.size());
  std::printf("%-*s  %10s  %7s  %-6s  %s\n", static_cast<int>(width), "MODEL", "DOWNLOADS", "LIKES", "GATED",
              "INFERDESK");
  for (const auto& m : models) {
    const std::string s = supported(m);
    const std::string arch = m.model_type.empty() ? "" : " (" + m.model_type + ")";
    std::printf("%-*s  %10s  %7s  %-6s  %s%s\n", static_cast<int>(width), m.id.c_str(), grouped(m.downloads).c_str(),
                grouped(m.likes).c_str(), hub::to_string(m.gated), s.c_str(), arch.c_str());
  }
}

}  // namespace

void register_search(CLI::App& app) {
  auto a = std::make_shared<SearchArgs>();
  CLI::App* c = app.add_subcommand("search", "Search text-generation models on the Hugging Face Hub");
  c->add_option("text", a->text, "Words in the model id")->required();
  c->add_option("--limit", a->limit, "How many results (default 20)");
  c->add_option("--token", a->token, "Hub token (default: HF_TOKEN, the huggingface_hub token file)");
  c->add_flag("--json", a->json, "One JSON array on stdout");
  c->callback([a] { run_search(*a); });
}

}  // namespace inferdesk::cli
