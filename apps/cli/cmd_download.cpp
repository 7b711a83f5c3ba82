// inferdesk-cli download: a repository snapshot from the Hugging Face Hub into the shared HF cache
// (resumable, verified, the layout transformers and vLLM read). Prints the snapshot folder on
// stdout, progress on stderr.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/download_progress.h"
#include "apps/cli/units.h"
#include "core/hub/download_plan.h"
#include "core/hub/snapshot_download.h"
#include "core/hub/token_store.h"

namespace inferdesk::cli {

namespace {

struct DownloadArgs {
  std::string repo;
  std::string revision = "main";
  std::vector<std::string> include;
  std::string cache_dir;
  std::string token;
  int parallel = 4;
};

// The app's own token store is the last resort: a problem with it (a file others can read) is
// worth a warning, not a failed download of a public model.
hub::ResolvedToken find_token(const hub::HubEnvironment& env, const std::string& flag) {
  hub::FileTokenStore store(hub::default_token_store_path(env));
  try {
    return hub::resolve_token(env, flag, &store);
  } catch (const hub::HubError& e) {
    std::fprintf(stderr, "warning: %s\n", e.what());
    return hub::resolve_token(env, flag, nullptr);
  }
}

void print_plan(const hub::DownloadPlan& plan) {
  std::fprintf(stderr, "%s @ %s (commit %s): %zu files, %s", plan.repo_id.c_str(), plan.revision.c_str(),
               plan.commit.substr(0, 12).c_str(), plan.files.size(), format_bytes(plan.total_bytes).c_str());
  if (plan.offline)
    std::fprintf(stderr, ", offline: from the cache\n");
  else
    std::fprintf(stderr, ", %s to download\n", format_bytes(plan.bytes_to_download).c_str());
  for (const auto& s : plan.skipped) std::fprintf(stderr, "skipped %s: %s\n", s.path.c_str(), s.reason.c_str());
}

void run_download(const DownloadArgs& a) {
  if (a.parallel < 1 || a.parallel > 16) throw Error(ErrorCode::InvalidArgument, "--parallel must be 1..16");
  const hub::HubEnvironment env = hub::read_hub_environment();
  const hub::ResolvedToken token = find_token(env, a.token);
  hub::HubClientOptions client_options;
  client_options.endpoint = hub::resolve_endpoint(env);
  client_options.token = token.token;
  client_options.http.user_agent = "inferdesk-cli";
  const hub::HubClient client(client_options);
  const hub::HfCache cache(a.cache_dir.empty() ? hub::resolve_cache_dir(env) : std::filesystem::path(a.cache_dir));

  hub::DownloadRequest request{a.repo, a.revision, hub::FileFilter{a.include}};
  hub::DownloadOptions options;
  options.parallel_files = a.parallel;
  options.offline = hub::offline_mode(env);
  const hub::DownloadPlan plan = hub::plan_download(client, cache, request, options);
  print_plan(plan);

  hub::SnapshotDownload download(client, cache, plan, options);
  DownloadProgressPrinter printer(stderr, isatty(STDERR_FILENO) == 1);
  download.start();
  std::optional<hub::DownloadResult> result;
  while (!(result = download.wait_for(std::chrono::milliseconds(200)))) printer.show(download.progress(), false);
  printer.show(result->files, true);
  if (!result->ok) {
    size_t failed = 0;
    for (const auto& f : result->files) failed += f.state == hub::FileState::Failed ? 1 : 0;
    const auto first = std::find_if(result->files.begin(), result->files.end(),
                                    [](const hub::FileProgress& f) { return f.error.has_value(); });
    const hub::HubErrorKind kind = first != result->files.end() ? *first->error : hub::HubErrorKind::Io;
    throw hub::HubError(kind, std::to_string(failed) + " of " + std::to_string(result->files.size()) +
                                  " files failed; " + result->error +
                                  " (run the same command again to resume what was downloaded)");
  }
  std::cout << result->snapshot_dir.string() << std::endl;
}

}  // namespace

void register_download(CLI::App& app) {
  auto a = std::make_shared<DownloadArgs>();
  CLI::App* c = app.add_subcommand("download", "Download a model from the Hugging Face Hub into the HF cache");
  c->add_option("repo", a->repo, "Repository id, ORG/NAME")->required();
  c->add_option("--revision", a->revision, "Branch, tag or commit (default main)");
  c->add_option("--include", a->include,
                "Only files matching this glob (repeatable; pickle .bin/.pt files are never downloaded)");
  c->add_option("--cache-dir", a->cache_dir,
                "Cache folder (default: HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub)");
  c->add_option("--token", a->token, "Hub token (default: HF_TOKEN, the huggingface_hub token file, InferDesk's)");
  c->add_option("--parallel", a->parallel, "Files downloaded at once (default 4)");
  c->callback([a] { run_download(*a); });
}

}  // namespace inferdesk::cli
