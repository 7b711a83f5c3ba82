// `inferdesk-cli tokenize` and `inferdesk-cli detokenize`: the model's tokenizer from the command
// line, Hugging Face compatible.
//   tokenize --tokenizer DIR --input FILE.jsonl [--add-special-tokens] [--split-special-tokens]
//       each input line is a JSON string; prints {"ids":[...]} per line, in order.
//   tokenize --tokenizer DIR --bench FILE [--runs N]
//       encodes the whole file N times single-threaded and prints the median throughput (JSON).
//   detokenize --tokenizer DIR --ids 1,2,3 [--skip-special-tokens] [--stream]
//       prints the decoded text exactly (no newline added); --stream decodes id by id with the
//       incremental decoder and prints the deltas as they come.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/cli/cli_common.h"
#include "apps/cli/commands.h"
#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"
#include "core/util/json_guard.h"

namespace inferdesk::cli {
namespace {

struct TokenizeOptions {
  std::string dir;
  std::string input;
  std::string bench;
  bool add_special = false;
  bool split_special = false;
  int runs = 5;
};

std::string read_all(const std::string& path) {
  std::ifstream in = open_input_file(path, "--bench");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_ids(const std::vector<int32_t>& ids, std::string& out) {
  out += "{\"ids\":[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  out += "]}\n";
}

// A line's text must be a JSON string ("Hello world", with the quotes); say so in words when the
// file is plain text or holds other JSON, showing the start of the line.
std::string jsonl_string(const std::string& line, const std::string& path, size_t lineno) {
  const std::string where = path + ":" + std::to_string(lineno) + ": ";
  const std::string shown = line.size() > 40 ? line.substr(0, 40) + "..." : line;
  const std::string expected = "--input expects JSON lines, one JSON string per line such as \"Hello world\" (with the "
                               "quotes); this line reads: " +
                               shown;
  check_json_depth(line, where);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error&) {
    throw Error(ErrorCode::InvalidArgument, where + "this line is not JSON. " + expected);
  }
  if (!j.is_string())
    throw Error(ErrorCode::InvalidArgument,
                where + "this line is JSON but not a string (it is " + j.type_name() + "). " + expected);
  return j.get<std::string>();
}

void run_tokenize_jsonl(const Tokenizer& tok, const TokenizeOptions& o) {
  std::ifstream in = open_input_file(o.input, "--input");
  EncodeOptions eo;
  eo.add_special_tokens = o.add_special;
  eo.split_special_tokens = o.split_special;
  std::string line, out;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    write_ids(tok.encode(jsonl_string(line, o.input, lineno), eo), out);
    if (out.size() > (1 << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void run_bench(const Tokenizer& tok, const TokenizeOptions& o) {
  const std::string text = read_all(o.bench);
  if (o.runs < 1 || o.runs > 1000) throw Error(ErrorCode::InvalidArgument, "--runs must be in 1..1000");
  EncodeOptions eo;
  eo.add_special_tokens = o.add_special;
  const size_t tokens = tok.encode(text, eo).size();  // warm-up (fills the piece cache, as HF's does)
  std::vector<double> times;
  for (int r = 0; r < o.runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const size_t n = tok.encode(text, eo).size();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (n != tokens) throw Error(ErrorCode::Internal, "benchmark: encodings differ between runs");
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  nlohmann::json j = {{"file", o.bench},
                      {"file_bytes", text.size()},
                      {"tokens", tokens},
                      {"runs", o.runs},
                      {"median_s", median},
                      {"times_s", times},
                      {"mb_per_s", static_cast<double>(text.size()) / median / 1e6}};
  std::printf("%s\n", j.dump().c_str());
}

}  // namespace

void register_tokenize(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  auto* tok = app.add_subcommand("tokenize", "Encode text with a model's tokenizer (Hugging Face compatible)");
  tok->add_option("--tokenizer", o->dir, "Model or tokenizer folder (tokenizer.json or vocab.json + merges.txt)")
      ->required();
  tok->add_option("--input", o->input, "JSONL file, one JSON string per line; prints {\"ids\":[...]} per line");
  tok->add_flag("--add-special-tokens", o->add_special, "Add BOS/EOS as the tokenizer's post-processor does");
  tok->add_flag("--split-special-tokens", o->split_special, "Encode special-token strings in the text as plain text");
  tok->add_option("--bench", o->bench, "Benchmark: encode this whole text file single-threaded, print MB/s");
  tok->add_option("--runs", o->runs, "Benchmark repetitions (median reported)");
  tok->callback([o] {
    if (o->input.empty() == o->bench.empty())
      throw Error(ErrorCode::InvalidArgument, "tokenize: give exactly one of --input FILE.jsonl or --bench FILE");
    const Tokenizer t = Tokenizer::from_dir(o->dir);
    if (!o->bench.empty())
      run_bench(t, *o);
    else
      run_tokenize_jsonl(t, *o);
  });

  struct DetokOptions {
    std::string dir, ids;
    bool skip_special = false;
    bool stream = false;
  };
  auto d = std::make_shared<DetokOptions>();
  auto* detok = app.add_subcommand("detokenize", "Decode token ids to text (Hugging Face compatible)");
  detok->add_option("--tokenizer", d->dir, "Model or tokenizer folder")->required();
  detok->add_option("--ids", d->ids, "Comma-separated token ids, e.g. 1,2,3")->required();
  detok->add_flag("--skip-special-tokens", d->skip_special, "Leave special tokens out of the text");
  detok->add_flag("--stream", d->stream, "Decode id by id with the incremental decoder");
  detok->callback([d] {
    const Tokenizer t = Tokenizer::from_dir(d->dir);
    const std::vector<int32_t> ids = parse_id_list(d->ids, "--ids");
    if (!d->stream) {
      const std::string text = t.decode(ids, d->skip_special);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return;
    }
    IncrementalDecoder dec(t, d->skip_special);
    for (int32_t id : ids) {
      const std::string delta = dec.push(id);
      std::fwrite(delta.data(), 1, delta.size(), stdout);
      std::fflush(stdout);
    }
    const std::string rest = dec.finish();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  });
}

}  // namespace inferdesk::cli
