// core/hub without a network: what the environment means, how untrusted replies are parsed, the
// digests, the allow-list, tokens and the cache layout on disk.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/hub/digest.h"
#include "core/hub/file_filter.h"
#include "core/hub/hf_cache.h"
#include "core/hub/hub_client.h"
#include "core/hub/hub_env.h"
#include "core/hub/hub_error.h"
#include "core/hub/hub_json.h"
#include "core/hub/retry.h"
#include "core/hub/token_store.h"

namespace inferdesk::hub {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::path(INFERDESK_BINARY_DIR) / "hub-unit" / (name + "_" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

HubEnvironment env_home(const std::string& home) {
  HubEnvironment e;
  e.home = home;
  return e;
}

TEST(HubEnv, CacheDirFollowsHuggingfaceHubPrecedence) {
  HubEnvironment e = env_home("/home/u");
  EXPECT_EQ(resolve_cache_dir(e), fs::path("/home/u/.cache/huggingface/hub"));
  e.xdg_cache_home = "/xdg";
  EXPECT_EQ(resolve_cache_dir(e), fs::path("/xdg/huggingface/hub"));
  e.hf_home = "~/hf";
  EXPECT_EQ(resolve_cache_dir(e), fs::path("/home/u/hf/hub"));
  EXPECT_EQ(hf_token_file(e), fs::path("/home/u/hf/token"));
  e.hf_hub_cache = "/cache";
  EXPECT_EQ(resolve_cache_dir(e), fs::path("/cache"));
  EXPECT_EQ(inferdesk_config_dir(e), fs::path("/home/u/.config/inferdesk"));
  e.xdg_config_home = "/cfg";
  EXPECT_EQ(default_token_store_path(e), fs::path("/cfg/inferdesk/hf-token"));
}

TEST(HubEnv, EndpointAndOfflineFlag) {
  HubEnvironment e;
  EXPECT_EQ(resolve_endpoint(e), "https://huggingface.co");
  e.hf_endpoint = "http://mirror.local:8080//";
  EXPECT_EQ(resolve_endpoint(e), "http://mirror.local:8080");
  for (const char* on : {"1", "ON", "yes", "True"}) {
    e.hf_hub_offline = on;
    EXPECT_TRUE(offline_mode(e)) << on;
  }
  for (const char* off : {"", "0", "false", "no"}) {
    e.hf_hub_offline = off;
    EXPECT_FALSE(offline_mode(e)) << off;
  }
}

TEST(HubNames, RepoIdsRevisionsPathsAndEtags) {
  EXPECT_EQ(repo_folder_name("Qwen/Qwen3-0.6B"), "models--Qwen--Qwen3-0.6B");
  EXPECT_EQ(repo_folder_name("gpt2"), "models--gpt2");
  EXPECT_TRUE(is_valid_repo_id("meta-llama/Llama-3.2-1B"));
  for (const char* bad : {"", "a/b/c", "a--b/c", "../x", "a/..", "/x", "a b/c", "a/"})
    EXPECT_FALSE(is_valid_repo_id(bad)) << bad;
  EXPECT_TRUE(is_valid_revision("main"));
  EXPECT_TRUE(is_valid_revision("refs/pr/1"));
  EXPECT_FALSE(is_valid_revision("../../etc"));
  EXPECT_TRUE(is_safe_repo_path("extra/blob.safetensors"));
  for (const char* bad : {"", "/etc/passwd", "a/../../b", "a//b", "./a", "a\\b", "a/", "x\n"})
    EXPECT_FALSE(is_safe_repo_path(bad)) << bad;
  EXPECT_EQ(normalize_etag("W/\"abc\""), "abc");
  EXPECT_EQ(normalize_etag("\"abc\""), "abc");
  EXPECT_FALSE(is_safe_etag("../x"));
  EXPECT_TRUE(is_commit_hash(std::string(40, 'a')));
  EXPECT_FALSE(is_commit_hash(std::string(40, 'A')));
}

TEST(HubJson, TreeRejectsPathsThatEscapeTheSnapshot) {
  const std::string oid(40, 'a');
  std::vector<RepoFile> files;
  for (const char* path : {"../../../../.bashrc", "/etc/x", "a/../../b"}) {
    const std::string body = R"([{"type":"file","oid":")" + oid + R"(","size":1,"path":")" + path + R"("}])";
    try {
      parse_tree_page(body, "tree", files);
      FAIL() << path << " was accepted";
    } catch (const HubError& e) {
      EXPECT_EQ(e.kind(), HubErrorKind::BadResponse);
      EXPECT_NE(std::string(e.what()).find("unsafe file path"), std::string::npos);
    }
  }
  EXPECT_TRUE(files.empty());
}

TEST(HubJson, TreeParsesLfsAndSkipsDirectories) {
  const std::string oid(40, 'b'), sha(64, 'c');
  const std::string body = R"([{"type":"directory","oid":")" + oid + R"(","size":0,"path":"d"},
    {"type":"file","oid":")" +
                           oid + R"(","size":5,"path":"d/a.json"},
    {"type":"file","oid":")" +
                           oid + R"(","size":7,"path":"m.safetensors","lfs":{"oid":")" + sha + R"(","size":7}}])";
  std::vector<RepoFile> files;
  parse_tree_page(body, "tree", files);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].etag(), oid);
  EXPECT_FALSE(files[0].lfs);
  ASSERT_TRUE(files[1].lfs);
  EXPECT_EQ(files[1].etag(), sha);
  // An LFS size that disagrees with the file's is a lie about what will be downloaded.
  const std::string lying = R"([{"type":"file","oid":")" + oid + R"(","size":7,"path":"m","lfs":{"oid":")" + sha +
                            R"(","size":8}}])";
  EXPECT_THROW(parse_tree_page(lying, "tree", files), HubError);
}

TEST(HubJson, HostileRepliesBecomeTypedErrors) {
  std::vector<RepoFile> files;
  EXPECT_THROW(parse_tree_page(std::string(100000, '['), "tree", files), HubError);
  EXPECT_THROW(parse_tree_page("{not json", "tree", files), HubError);
  EXPECT_THROW(parse_model_info(R"({"id":"a/b","sha":"../../x"})", "info"), HubError);
  EXPECT_THROW(parse_model_list(R"({"id":"a/b"})", "search"), HubError);
  // Fields of the wrong type are ignored, not trusted.
  const auto list = parse_model_list(R"([{"id":"a/b","downloads":"many","gated":"manual","config":[]}])", "s");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].downloads, 0);
  EXPECT_EQ(list[0].gated, Gated::Manual);
}

TEST(HubJson, ModelInfoFields) {
  const std::string sha(40, 'd');
  const auto info = parse_model_info(R"({"id":"o/m","sha":")" + sha + R"(","gated":"auto","cardData":{"license":"mit"},
     "config":{"architectures":["LlamaForCausalLM"],"model_type":"llama"},"siblings":[{"rfilename":"config.json"}],
     "safetensors":{"parameters":{"BF16":1000,"F32":24},"total":1024}})",
                                     "info");
  EXPECT_EQ(info.sha, sha);
  EXPECT_EQ(info.gated, Gated::Auto);
  EXPECT_EQ(info.license, "mit");
  EXPECT_EQ(info.model_type, "llama");
  ASSERT_EQ(info.architectures.size(), 1u);
  EXPECT_EQ(info.safetensors_total, 1024);
  EXPECT_EQ(info.safetensors_params.at("BF16"), 1000);
  EXPECT_EQ(info.siblings, std::vector<std::string>{"config.json"});
}

TEST(HubDigest, KnownVectorsAndStreaming) {
  Digest sha(DigestKind::Sha256, 3);
  sha.update("ab", 2);
  sha.update("c", 1);
  EXPECT_EQ(sha.finish(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // `git hash-object` of "hello\n".
  Digest git(DigestKind::GitBlobSha1, 6);
  git.update("hello\n", 6);
  EXPECT_EQ(git.finish(), "ce013625030ba8dba906f756967f9e9ca394464a");
  const fs::path dir = temp_dir("digest");
  write(dir / "f", "abcdef");
  Digest prefix(DigestKind::Sha256, 0);
  digest_file_prefix(dir / "f", 3, prefix);
  EXPECT_EQ(prefix.finish(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Digest past_end(DigestKind::Sha256, 0);
  EXPECT_THROW(digest_file_prefix(dir / "f", 7, past_end), HubError);
}

TEST(HubFilter, AllowListNeverAdmitsPickle) {
  for (const char* ok : {"model.safetensors", "sub/model-00001-of-00002.safetensors", "config.json", "tokenizer.model",
                         "vocab.txt", "merges.txt", "chat_template.jinja", "README.md", "LICENSE"})
    EXPECT_EQ(allow_list_refusal(ok), "") << ok;
  for (const char* no :
       {"pytorch_model.bin", "model.pt", "x.pth", "y.ckpt", "z.pkl", "a.gguf", "image.png", ".gitattributes"})
    EXPECT_NE(allow_list_refusal(no), "") << no;
  FileFilter f{{"*.bin", "*.json"}};
  EXPECT_FALSE(is_selected(f, "pytorch_model.bin"));  // an include glob cannot let pickle in
  EXPECT_TRUE(is_selected(f, "sub/config.json"));     // '*' crosses '/' as in huggingface_hub
  EXPECT_FALSE(is_selected(f, "model.safetensors"));
  EXPECT_TRUE(is_selected(FileFilter{{"extra/"}}, "extra/blob.safetensors"));
}

TEST(HubRetry, BackoffGrowsAndHonoursRetryAfter) {
  RetryPolicy p;
  p.initial_delay = std::chrono::milliseconds(100);
  p.max_delay = std::chrono::milliseconds(1000);
  EXPECT_EQ(retry_delay(p, 1, std::nullopt).count(), 100);
  EXPECT_EQ(retry_delay(p, 3, std::nullopt).count(), 400);
  EXPECT_EQ(retry_delay(p, 10, std::nullopt).count(), 1000);
  EXPECT_EQ(retry_delay(p, 1, 2.5).count(), 2500);
  p.max_retry_after = std::chrono::milliseconds(3000);
  EXPECT_EQ(retry_delay(p, 1, 86400.0).count(), 3000);
  HttpHeaders h;
  h.add("retry-after", "7");
  EXPECT_EQ(parse_retry_after(h), 7.0);
  HttpHeaders date;
  date.add("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT");
  EXPECT_FALSE(parse_retry_after(date));
}

TEST(HubError, RetryableKinds) {
  EXPECT_TRUE(HubError(HubErrorKind::Server, "x").retryable());
  EXPECT_TRUE(HubError(HubErrorKind::RateLimited, "x").retryable());
  EXPECT_TRUE(HubError(HubErrorKind::ConnectionDropped, "x").retryable());
  EXPECT_FALSE(HubError(HubErrorKind::Gated, "x").retryable());
  EXPECT_FALSE(HubError(HubErrorKind::Integrity, "x").retryable());
  EXPECT_EQ(HubError(HubErrorKind::RevisionNotFound, "x").code(), ErrorCode::NotFound);
}

TEST(HubToken, PrecedenceExplicitThenEnvThenFileThenStore) {
  const fs::path dir = temp_dir("token");
  HubEnvironment env = env_home(dir.string());
  env.hf_home = (dir / "hf").string();
  FileTokenStore store(dir / "cfg" / "hf-token");
  EXPECT_EQ(resolve_token(env, "", &store).source, TokenSource::None);
  store.save("hf_store\n");
  EXPECT_EQ(resolve_token(env, "", &store).token, "hf_store");
  EXPECT_EQ(resolve_token(env, "", &store).source, TokenSource::AppStore);
  write(dir / "hf" / "token", "  hf_file\n");
  EXPECT_EQ(resolve_token(env, "", &store).token, "hf_file");
  EXPECT_EQ(resolve_token(env, "", &store).source, TokenSource::HfTokenFile);
  env.hf_token = "hf_env";
  EXPECT_EQ(resolve_token(env, "", &store).token, "hf_env");
  EXPECT_EQ(resolve_token(env, "hf_flag", &store).token, "hf_flag");
  EXPECT_EQ(resolve_token(env, "hf_flag", &store).source, TokenSource::Explicit);
}

TEST(HubToken, FileStoreIsPrivateAndRefusesReadableFiles) {
  const fs::path dir = temp_dir("store");
  FileTokenStore store(dir / "inferdesk" / "hf-token");
  store.save("hf_secret");
  struct stat st {};
  ASSERT_EQ(stat((dir / "inferdesk" / "hf-token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(store.load().value_or(""), "hf_secret");
  chmod((dir / "inferdesk" / "hf-token").c_str(), 0644);
  EXPECT_THROW(store.load(), HubError);
  store.clear();
  EXPECT_FALSE(store.load());
}

TEST(HubCache, LayoutLinksRefsAndOfflineLookup) {
  const fs::path root = temp_dir("cache");
  HfCache cache(root);
  const std::string repo = "org/name", commit(40, 'e'), etag(64, 'f');
  cache.prepare_repo(repo);
  EXPECT_TRUE(fs::exists(root / "CACHEDIR.TAG"));
  EXPECT_FALSE(cache.cached_snapshot(repo, "main"));
  write(cache.blob_path(repo, etag), "weights");
  cache.link_snapshot_file(repo, commit, "sub/dir/w.safetensors", etag);
  const fs::path link = root / "models--org--name" / "snapshots" / commit / "sub/dir/w.safetensors";
  ASSERT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link).string(), "../../../../blobs/" + etag);
  EXPECT_TRUE(cache.has_snapshot_file(repo, commit, "sub/dir/w.safetensors"));
  cache.write_ref(repo, "main", commit);
  std::ifstream ref(root / "models--org--name" / "refs" / "main");
  std::string text((std::istreambuf_iterator<char>(ref)), {});
  EXPECT_EQ(text, commit);  // no newline, as huggingface_hub writes it
  EXPECT_EQ(cache.cached_snapshot(repo, "main").value(), cache.snapshot_dir(repo, commit));
  EXPECT_EQ(cache.cached_snapshot(repo, commit).value(), cache.snapshot_dir(repo, commit));
  write(cache.incomplete_path(repo, etag), "part");
  cache.remove_partial_downloads(repo);
  EXPECT_FALSE(fs::exists(cache.incomplete_path(repo, etag)));
  EXPECT_TRUE(fs::exists(cache.blob_path(repo, etag)));
}

TEST(HubCache, BlobLockExcludesASecondHolder) {
  const fs::path root = temp_dir("lock");
  BlobLock a(root / "x.lock");
  ASSERT_TRUE(a.try_lock());
  BlobLock b(root / "x.lock");  // flock is per open file description: a second open conflicts
  EXPECT_FALSE(b.try_lock());
}

}  // namespace
}  // namespace inferdesk::hub
