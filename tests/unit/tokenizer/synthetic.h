// A small SentencePiece-style tokenizer.json built in code for unit tests.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace tokenizer_test {

// Vocabulary: <unk>=0 <s>=1 </s>=2, <0x00>..<0xFF> = 3..258, then the pieces below.
inline nlohmann::json synthetic_tokenizer() {
  using nlohmann::json;
  json vocab = json::object();
  vocab["<unk>"] = 0;
  vocab["<s>"] = 1;
  vocab["</s>"] = 2;
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    vocab[hex] = 3 + b;
  }
  int id = 259;
  for (const char* t : {"\xE2\x96\x81",
                        "a",
                        "b",
                        "c",
                        "x",
                        "y",
                        "z",
                        "ab",
                        "abc",
                        "\xE2\x96\x81"
                        "a",
                        "aa",
                        "\xE2\x96\x81"
                        "ab",
                        "xyz",
                        "h",
                        "e",
                        "l",
                        "o",
                        "he",
                        "ll",
                        "hell",
                        "hello"})
    vocab[t] = id++;
  json j;
  j["version"] = "1.0";
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"},
                        {"replacement", "\xE2\x96\x81"},
                        {"prepend_scheme", "first"},
                        {"split", false}};
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                                 {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}})},
                         {"special_tokens",
                          {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}},
                           {"</s>", {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}}}}}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                                {{"type", "ByteFallback"}},
                                {{"type", "Fuse"}},
                                {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  j["model"] = {{"type", "BPE"},
                {"unk_token", "<unk>"},
                {"fuse_unk", true},
                {"byte_fallback", true},
                {"vocab", vocab},
                {"merges", json::array({"a b", "ab c", "\xE2\x96\x81 a",
                                        "\xE2\x96\x81"
                                        "a b",
                                        "a a", "h e", "l l", "he ll", "hell o"})}};
  j["added_tokens"] = json::array({
      {{"id", 0}, {"content", "<unk>"}, {"special", true}, {"normalized", false}},
      {{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
      {{"id", 2}, {"content", "</s>"}, {"special", true}, {"normalized", false}},
  });
  return j;
}

}  // namespace tokenizer_test
