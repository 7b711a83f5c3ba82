#include "gui/hub/repo_overview.h"

#include <QRegularExpression>
#include <QStringList>

#include <algorithm>
#include <exception>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/model/architectures.h"
#include "core/util/json_guard.h"

namespace inferdesk::gui {

namespace {

bool is_weight_file(const std::string& path) {
  return path.size() > 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0;
}

// The weight folder of `path` ("" for the root): its first directory.
std::string top_folder(const std::string& path) {
  const size_t slash = path.find('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// A repository path as a glob that matches only itself.
std::string literal_glob(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '*' || c == '?' || c == '[')
      out += std::string("[") + c + "]";
    else
      out += c;
  }
  return out;
}

QString dtype_label(const RepoOverview& o) {
  if (!o.info.safetensors_params.empty()) {
    const auto most = std::max_element(o.info.safetensors_params.begin(), o.info.safetensors_params.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    return QString::fromStdString(most->first);
  }
  const std::string t = o.config ? o.config->torch_dtype : "";
  if (t == "bfloat16") return "BF16";
  if (t == "float16") return "F16";
  if (t == "float32") return "F32";
  return QObject::tr("unquantized");
}

// The quantization_config's method and bits from the raw config.json (core/model refuses the
// methods it does not run, so the parsed ModelConfig cannot say which one it was).
struct RawQuant {
  std::string method;
  int bits = 0;
};
std::optional<RawQuant> raw_quant(const std::optional<std::string>& config_json) {
  if (!config_json) return std::nullopt;
  try {
    const nlohmann::json j = parse_untrusted_json(*config_json, "config.json");
    const auto q = j.find("quantization_config");
    if (q == j.end() || !q->is_object()) return std::nullopt;
    RawQuant r;
    if (auto m = q->find("quant_method"); m != q->end() && m->is_string()) r.method = m->get<std::string>();
    if (auto b = q->find("bits"); b != q->end() && b->is_number_integer()) r.bits = b->get<int>();
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void parse_config(RepoOverview& o, const std::optional<std::string>& config_json) {
  if (o.access_error) {
    o.config_problem = o.access_error->kind() == hub::HubErrorKind::Gated
                           ? QObject::tr("its files (config.json too) open once the Hub grants your token access")
                           : QString::fromUtf8(o.access_error->what());
    return;
  }
  if (!config_json) {
    o.config_problem = QObject::tr("the repository has no config.json");
    return;
  }
  try {
    o.config = ModelConfig::from_json(parse_untrusted_json(*config_json, "config.json"));
  } catch (const std::exception& e) {
    o.config_problem = QString::fromUtf8(e.what());
  }
}

void describe_architecture(RepoOverview& o, const std::optional<std::string>& config_json) {
  std::string type = o.config ? o.config->model_type : o.info.model_type;
  if (type.empty() && config_json) {
    try {
      const auto j = parse_untrusted_json(*config_json, "config.json");
      if (auto t = j.find("model_type"); t != j.end() && t->is_string()) type = t->get<std::string>();
    } catch (const std::exception&) {
    }
  }
  o.model_type = QString::fromStdString(type);
  o.architecture = o.config && !o.config->architecture.empty() ? QString::fromStdString(o.config->architecture)
                   : o.info.architectures.empty()              ? QString()
                                                               : QString::fromStdString(o.info.architectures[0]);
  o.architecture_supported = !type.empty() && find_architecture(type) != nullptr;
  const QString list = QString::fromStdString(supported_model_types_list());
  if (type.empty())
    o.support_note = QObject::tr("the repository does not say its model_type (InferDesk runs: %1)").arg(list);
  else if (o.architecture_supported)
    o.support_note = QObject::tr("%1 is supported").arg(o.model_type);
  else
    o.support_note = QObject::tr("%1 is not supported (InferDesk runs: %2)").arg(o.model_type, list);
}

RepoVariant root_variant(const RepoOverview& o, qint64 bytes, const std::optional<std::string>& config_json) {
  RepoVariant v;
  v.file_bytes = bytes;
  v.downloadable = true;
  const auto quant = raw_quant(config_json);
  if (quant) {
    const std::string& m = quant->method;
    v.format = m == "awq" ? VariantFormat::Awq : m == "gptq" ? VariantFormat::Gptq : VariantFormat::OtherQuant;
    if (o.config && o.config->quantization.quantized()) v.format = VariantFormat::Fp8;
    v.label = v.format == VariantFormat::Fp8
                  ? QStringLiteral("FP8 (%1)").arg(QString::fromStdString(o.config->quantization.describe()))
                  : format_name(v.format);
    if (quant->bits > 0 && v.format != VariantFormat::Fp8) v.label += QStringLiteral(" INT%1").arg(quant->bits);
    if (v.format == VariantFormat::OtherQuant) v.label = QString::fromStdString(m);
  } else if (const auto by_name = format_from_name(QString::fromStdString(o.repo_id));
             by_name && *by_name != VariantFormat::Unquantized) {
    v.format = *by_name;
    v.label = format_name(v.format) + QObject::tr(" (by its name)");
  } else {
    v.label = dtype_label(o);
  }
  const bool format_ok = v.format == VariantFormat::Unquantized || v.format == VariantFormat::Fp8;
  v.runnable = o.config.has_value() && o.architecture_supported && format_ok;
  if (!o.architecture_supported)
    v.note = o.support_note;
  else if (!format_ok)  // before the config: core/model refuses to parse a method it does not run
    v.note = QObject::tr("InferDesk does not run %1 weights yet").arg(format_name(v.format));
  else if (!o.config)
    v.note = o.config_problem;
  v.downloadable = v.runnable;
  return v;
}

}  // namespace

const RepoVariant* RepoOverview::rootVariant() const {
  for (const auto& v : variants)
    if (v.folder.isEmpty() && !v.quantize_on_load) return &v;
  return nullptr;
}

QString format_name(VariantFormat f) {
  switch (f) {
    case VariantFormat::Unquantized: return QObject::tr("unquantized");
    case VariantFormat::Fp8: return QStringLiteral("FP8");
    case VariantFormat::Awq: return QStringLiteral("AWQ");
    case VariantFormat::Gptq: return QStringLiteral("GPTQ");
    case VariantFormat::OtherQuant: return QObject::tr("quantized");
  }
  return {};
}

std::optional<VariantFormat> format_from_name(const QString& name) {
  const QString n = name.toLower();
  auto has = [&](const char* word) {
    return QRegularExpression(QStringLiteral("(^|[^a-z0-9])%1([^a-z]|$)").arg(word)).match(n).hasMatch();
  };
  if (has("awq")) return VariantFormat::Awq;
  if (has("gptq")) return VariantFormat::Gptq;
  if (has("fp8") || has("f8")) return VariantFormat::Fp8;
  if (has("int4") || has("int8") || has("w4a16") || has("w8a8") || has("bnb") || has("4bit") || has("8bit"))
    return VariantFormat::OtherQuant;
  if (has("bf16") || has("fp16") || has("f16") || has("fp32")) return VariantFormat::Unquantized;
  return std::nullopt;
}

QString readme_summary(const std::string& readme, int max_chars) {
  QString text = QString::fromUtf8(readme.data(), static_cast<qsizetype>(readme.size()));
  text.replace("\r\n", "\n");
  if (text.startsWith("---\n")) {  // YAML front matter (the model card's metadata)
    const qsizetype end = text.indexOf("\n---", 4);
    if (end >= 0) text = text.mid(text.indexOf('\n', end + 1) + 1);
  }
  static const QRegularExpression kBlank("\\n\\s*\\n");
  static const QRegularExpression kMarkup("[*_`]+|\\[([^\\]]*)\\]\\([^)]*\\)");
  bool in_code = false;
  for (const QString& block : text.split(kBlank)) {
    QStringList prose;
    for (const QString& raw : block.split('\n')) {
      const QString line = raw.trimmed();
      if (line.startsWith("```")) in_code = !in_code;
      if (in_code || line.startsWith("```") || line.isEmpty()) continue;
      if (line.startsWith('#') || line.startsWith('<') || line.startsWith('|') || line.startsWith('!') ||
          line.startsWith("[!") || line.startsWith('>') || line.startsWith("---"))
        continue;
      prose << line;
    }
    QString para = prose.join(' ');
    para.replace(kMarkup, "\\1");
    para = para.simplified();
    if (para.count(QRegularExpression("[A-Za-z]")) < 12) continue;
    if (para.size() > max_chars) {
      const qsizetype cut = para.lastIndexOf(' ', max_chars);
      para = para.left(cut > max_chars / 2 ? cut : max_chars) + QStringLiteral("\u2026");
    }
    return para;
  }
  return {};
}

void describe_repo(RepoOverview& o, const std::string& readme, const std::optional<std::string>& config_json) {
  o.readme_summary = readme_summary(readme);
  parse_config(o, config_json);
  describe_architecture(o, config_json);

  // Weight folders that are variants of their own: named after a format, or with a config.json.
  std::set<std::string> variant_folders;
  for (const auto& f : o.files) {
    const std::string dir = top_folder(f.path);
    if (dir.empty() || !is_weight_file(f.path)) continue;
    const bool own_config = std::any_of(o.files.begin(), o.files.end(),
                                        [&](const hub::RepoFile& g) { return g.path == dir + "/config.json"; });
    if (own_config || format_from_name(QString::fromStdString(dir))) variant_folders.insert(dir);
  }
  std::map<std::string, qint64> folder_bytes;
  qint64 root_bytes = 0;
  o.root_filter = {};
  o.download_bytes = 0;
  o.skipped.clear();
  for (const auto& f : o.files) {
    if (const std::string why = hub::allow_list_refusal(f.path); !why.empty()) {
      o.skipped << QString::fromStdString(f.path + ": " + why);
      continue;
    }
    const std::string dir = top_folder(f.path);
    if (variant_folders.count(dir)) {
      if (is_weight_file(f.path)) folder_bytes[dir] += f.size;
      continue;
    }
    if (is_weight_file(f.path)) root_bytes += f.size;
    o.download_bytes += f.size;
    if (!variant_folders.empty()) o.root_filter.include.push_back(literal_glob(f.path));
  }
  const qint64 per_param = o.config && o.config->torch_dtype == "float32" ? 4 : 2;
  o.params = o.info.safetensors_total > 0 ? o.info.safetensors_total : root_bytes / per_param;

  o.variants.clear();
  if (root_bytes > 0) {
    const RepoVariant root = root_variant(o, root_bytes, config_json);
    o.variants.push_back(root);
    if (root.runnable && root.format == VariantFormat::Unquantized) {
      RepoVariant fp8 = root;
      fp8.label = QObject::tr("FP8 on load (from %1)").arg(root.label);
      fp8.format = VariantFormat::Fp8;
      fp8.quantize_on_load = true;
      fp8.note = QObject::tr("downloads the %1 weights; InferDesk quantizes the projections to FP8 as it loads them")
                     .arg(root.label);
      o.variants.push_back(fp8);
    }
  }
  for (const auto& [dir, bytes] : folder_bytes) {
    RepoVariant v;
    v.folder = QString::fromStdString(dir + "/");
    v.format = format_from_name(v.folder).value_or(VariantFormat::OtherQuant);
    v.label = QStringLiteral("%1 (%2)").arg(format_name(v.format), v.folder);
    v.file_bytes = bytes;
    v.note = QObject::tr("the wizard downloads the repository's main weights; for this folder use "
                         "inferdesk-cli download %1 --include '%2*'")
                 .arg(QString::fromStdString(o.repo_id), v.folder);
    o.variants.push_back(v);
  }
}

RepoOverview fetch_repo_overview(const hub::HubClient& client, const std::string& repo_id) {
  RepoOverview o;
  o.repo_id = repo_id;
  o.info = client.model_info(repo_id, "main");
  // Everything else at the commit the info named, so the pieces agree even if main moves meanwhile.
  const std::string rev = o.info.sha.empty() ? "main" : o.info.sha;
  o.files = client.list_files(repo_id, rev);
  std::string readme;
  std::optional<std::string> config;
  try {
    readme = client.readme(repo_id, rev);
    config = client.small_file(repo_id, rev, "config.json");
  } catch (const hub::HubError& e) {
    // A gated repository lists its files but serves none of them until access is granted.
    const auto k = e.kind();
    if (k != hub::HubErrorKind::Gated && k != hub::HubErrorKind::Unauthorized && k != hub::HubErrorKind::Forbidden)
      throw;
    o.access_error = e;
  }
  describe_repo(o, readme, config);
  return o;
}

}  // namespace inferdesk::gui
