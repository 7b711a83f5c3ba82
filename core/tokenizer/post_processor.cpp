#include "core/tokenizer/post_processor.h"

#include "core/tokenizer/json_util.h"

namespace inferdesk::tok {
namespace {

class WrapProcessor final : public PostProcessor {
 public:
  WrapProcessor(std::vector<int32_t> prefix, std::vector<int32_t> suffix)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  void process(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  }

 private:
  std::vector<int32_t> prefix_, suffix_;
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void process(std::vector<int32_t>& ids) const override {
    for (const auto& p : parts_) p->process(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

int32_t checked_id(const nlohmann::json& v, const std::string& where) {
  if (!v.is_number_integer()) fail(where, "expected a token id");
  const long long id = v.get<long long>();
  if (id < 0 || id > (1 << 24)) fail(where, "token id " + std::to_string(id) + " out of range");
  return static_cast<int32_t>(id);
}

// TemplateProcessing "single" template: special token ids and the sequence ($A).
std::unique_ptr<PostProcessor> make_template(const nlohmann::json& j, const std::string& where) {
  const auto& single = member(j, "single", where);
  if (!single.is_array()) fail(where + ".single", "expected an array");
  const nlohmann::json empty = nlohmann::json::object();
  const auto& specials = j.contains("special_tokens") ? j["special_tokens"] : empty;
  std::vector<int32_t> prefix, suffix;
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string w = where + ".single[" + std::to_string(i) + "]";
    const auto& piece = single[i];
    if (piece.is_object() && piece.contains("Sequence")) {
      if (seen_sequence) fail(w, "the single template uses the sequence twice");
      seen_sequence = true;
      continue;
    }
    if (!piece.is_object() || !piece.contains("SpecialToken")) fail(w, "expected SpecialToken or Sequence");
    const std::string name = get_string(piece["SpecialToken"], "id", w + ".SpecialToken");
    if (!specials.is_object() || !specials.contains(name))
      fail(w, "special token \"" + name + "\" is not listed in special_tokens");
    const auto& ids = member(specials[name], "ids", where + ".special_tokens." + name);
    if (!ids.is_array()) fail(where + ".special_tokens." + name + ".ids", "expected an array");
    auto& dst = seen_sequence ? suffix : prefix;
    for (const auto& id : ids) dst.push_back(checked_id(id, where + ".special_tokens." + name + ".ids"));
  }
  if (!seen_sequence) fail(where + ".single", "the template has no sequence ($A)");
  return std::make_unique<WrapProcessor>(std::move(prefix), std::move(suffix));
}

// BertProcessing / RobertaProcessing: {"cls": ["[CLS]", 101], "sep": ["[SEP]", 102]}.
std::unique_ptr<PostProcessor> make_cls_sep(const nlohmann::json& j, const std::string& where) {
  auto id_of = [&](const char* key) {
    const auto& v = member(j, key, where);
    if (!v.is_array() || v.size() != 2) fail(where + "." + key, "expected [token, id]");
    return checked_id(v[1], where + "." + key);
  };
  return std::make_unique<WrapProcessor>(std::vector<int32_t>{id_of("cls")}, std::vector<int32_t>{id_of("sep")});
}

}  // namespace

std::unique_ptr<PostProcessor> make_wrap_post_processor(std::vector<int32_t> prefix, std::vector<int32_t> suffix) {
  return std::make_unique<WrapProcessor>(std::move(prefix), std::move(suffix));
}

std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = stage_type(j, where);
  if (type == "TemplateProcessing") return make_template(j, where);
  if (type == "ByteLevel") return nullptr;  // only adjusts offsets
  if (type == "BertProcessing" || type == "RobertaProcessing") return make_cls_sep(j, where);
  if (type == "Sequence") {
    const auto& list = member(j, "processors", where);
    if (!list.is_array()) fail(where + ".processors", "expected an array");
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto p = make_post_processor(list[i], where + ".processors[" + std::to_string(i) + "]");
      if (p) parts.push_back(std::move(p));
    }
    return std::make_unique<SequenceProcessor>(std::move(parts));
  }
  throw Error(ErrorCode::Unsupported,
              where + ": post-processor type \"" + type +
                  "\" is not supported (supported: TemplateProcessing, BertProcessing, RobertaProcessing, "
                  "ByteLevel, Sequence)");
}

}  // namespace inferdesk::tok
