// What the wizard's model page and fit check know about a Hub repository before downloading it:
// the Hub's model info and file list, config.json (parsed by core/model as loading would parse it),
// the README's summary, whether InferDesk runs the architecture (core/model's registry), and the
// variants of the weights the repository holds (BF16 / F16 / F32, FP8, AWQ, GPTQ, ... read from
// config.json's quantization_config, the safetensors dtypes and the names of weight folders), plus
// the "FP8 on load" preset over unquantized weights (core LoadOptions::quantization = Fp8).
#pragma once

#include <QString>
#include <QStringList>

#include <optional>
#include <string>
#include <vector>

#include "core/hub/file_filter.h"
#include "core/hub/hub_client.h"
#include "core/model/config.h"

namespace inferdesk::gui {

enum class VariantFormat { Unquantized, Fp8, Awq, Gptq, OtherQuant };

struct RepoVariant {
  QString label;  // "BF16", "FP8 (compressed-tensors ...)", "AWQ INT4", "FP8 on load (from BF16)"
  VariantFormat format = VariantFormat::Unquantized;
  QString folder;                 // "" for the repository's root, else the weight folder ("awq/")
  qint64 file_bytes = 0;          // its safetensors on disk
  bool runnable = false;          // InferDesk can load it
  bool downloadable = false;      // the wizard downloads it (the root's weights)
  bool quantize_on_load = false;  // the FP8-on-load preset over the root's unquantized weights
  QString note;                   // why it cannot run or be downloaded here, or what it is
};

struct RepoOverview {
  std::string repo_id;
  hub::ModelInfo info;
  std::vector<hub::RepoFile> files;
  std::optional<ModelConfig> config;  // config.json as core/model parses it
  // Set when the Hub showed the file list but not the files (gated, no or a refused token): the
  // wizard asks for a token and fetches again.
  std::optional<hub::HubError> access_error;
  QString config_problem;  // why there is none ("no config.json", the parse error)
  QString readme_summary;  // the README's first paragraph of prose, without front matter
  QString model_type, architecture;
  bool architecture_supported = false;
  QString support_note;  // "qwen2 is supported" / "gpt2 is not supported (InferDesk runs: ...)"
  qint64 params = 0;     // the Hub's safetensors count, else estimated from the weight bytes
  std::vector<RepoVariant> variants;
  hub::FileFilter root_filter;  // what the root variant's download includes (empty: everything allowed)
  qint64 download_bytes = 0;    // the root variant's allow-listed files
  QStringList skipped;          // files the allow-list leaves out ("pytorch_model.bin: pickle ...")

  const RepoVariant* rootVariant() const;  // the downloadable unquantized or quantized root weights
};

// The network part, on a worker thread: model info (pinned to its commit), the file list, README
// and config.json; then describe_repo(). Throws HubError as the client does.
RepoOverview fetch_repo_overview(const hub::HubClient& client, const std::string& repo_id);

// The pure part: fills everything after `files` from info, files, README text and config text.
void describe_repo(RepoOverview& o, const std::string& readme, const std::optional<std::string>& config_json);

// The README's first paragraph that is prose: YAML front matter, headings, badges, HTML and tables
// dropped; at most about `max_chars` characters, cut at a word.
QString readme_summary(const std::string& readme, int max_chars = 600);

// The format a weight folder's name or a repository id suggests ("...-AWQ", "gptq-int4", "fp8").
std::optional<VariantFormat> format_from_name(const QString& name);
QString format_name(VariantFormat f);

}  // namespace inferdesk::gui
