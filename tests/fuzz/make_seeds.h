// fuzz_make_seeds: builds each target's seed corpus from tests/golden and the shared data at run
// time (nothing of the shared data is committed). Internal to tests/fuzz.
#pragma once

#include <filesystem>
#include <string>

namespace inferdesk::fuzz {

// Writes out/<target>/<name>.
void write_seed(const std::filesystem::path& out, const std::string& target, const std::string& name,
                const std::string& bytes);

// tokenizer_load seeds: each real tokenizer.json cut down to its first ids (make_seeds_tokenizer.cpp).
void make_tokenizer_seeds(const std::filesystem::path& shared, const std::filesystem::path& out);

// chat_template, server_request, tokenizer_encode and hub_response seeds (make_seeds_text.cpp).
void make_chat_and_text_seeds(const std::filesystem::path& source, const std::filesystem::path& shared,
                              const std::filesystem::path& out);

}  // namespace inferdesk::fuzz
