// Seeds of the text-shaped targets: chat templates (each real template alone, and with a golden
// conversation as its context), server requests (the same conversations as bodies and as raw HTTP
// requests), tokenizer text (the golden tokenizer corpus for each loaded tokenizer) and Hub replies
// (the shapes the Hub sends, written here: the Hub is not reachable from tests).
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/make_seeds.h"

namespace inferdesk::fuzz {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::ordered_json;

std::vector<fs::path> templates_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".jinja") out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

// The context apply_chat_template builds for one golden conversation.
Json context_of(const Json& conv, const Json& tool_sets) {
  Json ctx = Json::object();
  ctx["messages"] = conv.value("messages", Json::array());
  const Json tools = conv.value("tools", Json());
  ctx["tools"] = tools.is_string() && tool_sets.contains(tools.get<std::string>()) ? tool_sets[tools.get<std::string>()]
                                                                                   : Json();
  ctx["add_generation_prompt"] = conv.value("add_generation_prompt", true);
  ctx["bos_token"] = "<s>";
  ctx["eos_token"] = "</s>";
  if (conv.contains("documents")) ctx["documents"] = conv["documents"];
  const Json kwargs = conv.value("kwargs", Json::object());
  for (const auto& [k, v] : kwargs.items()) ctx[k] = v;
  return ctx;
}

std::string http_post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer sk-fuzz\r\n" +
         "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

void chat_and_server_seeds(const fs::path& source, const fs::path& shared, const fs::path& out) {
  const auto templates = templates_in(shared / "chat-templates");
  for (const fs::path& t : templates) write_seed(out, "chat_template", t.filename().string(), read_file(t));
  const std::string text = read_file(source / "tests" / "golden" / "chat" / "conversations.json");
  if (text.empty()) return;
  const Json doc = Json::parse(text);
  const Json tool_sets = doc.value("tool_sets", Json::object());
  size_t i = 0;
  for (const Json& conv : doc.value("conversations", Json::array())) {
    const std::string name = conv.value("name", "conv" + std::to_string(i));
    const Json ctx = context_of(conv, tool_sets);
    if (!templates.empty()) {
      const fs::path& t = templates[(i * 7) % templates.size()];
      write_seed(out, "chat_template", name + ".ctx", read_file(t) + "\n%%FILE context.json\n" + ctx.dump());
    }
    Json body = {{"model", "fuzz-model"}, {"messages", ctx["messages"]}, {"max_tokens", 16}};
    if (!ctx["tools"].is_null()) body["tools"] = ctx["tools"];
    if (i % 2) body["stream"] = true, body["stream_options"] = {{"include_usage", true}};
    if (i % 3 == 0) body["chat_template_kwargs"] = {{"enable_thinking", false}};
    write_seed(out, "server_request", name + ".json", body.dump());
    write_seed(out, "server_request", name + ".http", http_post("/v1/chat/completions", body.dump()));
    ++i;
  }
  const Json completion = {{"model", "fuzz-model"},
                           {"prompt", {"Hello", "World"}},
                           {"n", 2},
                           {"max_tokens", 8},
                           {"logprobs", 2},
                           {"echo", true},
                           {"stop", {"\n"}}};
  write_seed(out, "server_request", "completion.http", http_post("/v1/completions", completion.dump()));
  const Json ids = {{"prompt", {1, 2, 3}}, {"max_tokens", 4}, {"temperature", 0.5}, {"seed", 7}};
  write_seed(out, "server_request", "completion_ids.json", ids.dump());
  write_seed(out, "server_request", "tokenize.http",
             http_post("/tokenize", R"({"prompt":"Hi there","return_token_strs":true})"));
  write_seed(out, "server_request", "detokenize.http", http_post("/detokenize", R"({"tokens":[9707,1052]})"));
  write_seed(out, "server_request", "models.http",
             "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-fuzz\r\n\r\n");
}

void tokenizer_text_seeds(const fs::path& source, const fs::path& out) {
  const std::string corpus = read_file(source / "tests" / "golden" / "tokenizer" / "corpus.jsonl");
  size_t line_no = 0, begin = 0;
  while (begin < corpus.size()) {
    size_t end = corpus.find('\n', begin);
    if (end == std::string::npos) end = corpus.size();
    const std::string line = corpus.substr(begin, end - begin);
    begin = end + 1;
    Json j;
    try {
      j = Json::parse(line);
    } catch (const std::exception&) {
      continue;
    }
    if (!j.is_string()) continue;
    // Tokenizer k with options k (add / split special tokens, skip special tokens on decode).
    for (char k = 0; k < 6; ++k)
      write_seed(out, "tokenizer_encode", std::to_string(line_no) + "_" + std::to_string(k),
                 std::string{k, static_cast<char>(k * 3)} + j.get<std::string>());
    ++line_no;
  }
}

void hub_seeds(const fs::path& out) {
  const std::string sha = "0123456789abcdef0123456789abcdef01234567";
  write_seed(
      out, "hub_response", "search.json",
      R"([{"id":"org/model","downloads":12,"likes":3,"gated":false,"private":false,"pipeline_tag":"text-generation","library_name":"transformers","config":{"model_type":"llama","architectures":["LlamaForCausalLM"]}},{"id":"a/b","gated":"manual"}])");
  write_seed(
      out, "hub_response", "info.json",
      R"({"id":"org/model","sha":")" + sha +
          R"(","gated":"auto","private":false,"disabled":false,"downloads":5,"likes":1,"tags":["license:apache-2.0","llama"],"cardData":{"license":"mit"},"config":{"model_type":"qwen2","architectures":["Qwen2ForCausalLM"]},"siblings":[{"rfilename":"config.json"},{"rfilename":"model.safetensors"}],"safetensors":{"parameters":{"BF16":494032768},"total":494032768},"usedStorage":988097824,"lastModified":"2024-09-19T00:00:00.000Z","pipeline_tag":"text-generation","library_name":"transformers"})");
  write_seed(out, "hub_response", "tree.json",
             R"([{"type":"file","path":"config.json","size":659,"oid":")" + sha +
                 R"("},{"type":"directory","path":"sub","oid":")" + sha +
                 R"("},{"type":"file","path":"model.safetensors","size":988097824,"oid":")" + sha +
                 R"(","lfs":{"oid":")" + sha + sha.substr(0, 24) + R"(","size":988097824,"pointerSize":135}}])");
  write_seed(
      out, "hub_response", "gated.txt",
      "{\"error\":\"Access to model org/model is restricted.\"}\n%%FILE headers\nHTTP/1.1 401 Unauthorized\nX-Error-Code: GatedRepo\nX-Error-Message: Access restricted\n");
  write_seed(
      out, "hub_response", "ratelimit.txt",
      "{\"error\":\"rate limited\"}\n%%FILE headers\nHTTP/1.1 429 Too Many Requests\nRetry-After: 30\nETag: W/\"abc-123\"\n");
  write_seed(
      out, "hub_response", "notfound.txt",
      "Entry not found\n%%FILE headers\nHTTP/1.1 404 Not Found\nX-Error-Code: EntryNotFound\nLink: <https://huggingface.co/api/models/x/tree/main?cursor=abc>; rel=\"next\"\n");
}

}  // namespace

void make_chat_and_text_seeds(const fs::path& source, const fs::path& shared, const fs::path& out) {
  chat_and_server_seeds(source, shared, out);
  tokenizer_text_seeds(source, out);
  hub_seeds(out);
}

}  // namespace inferdesk::fuzz
