// jinja2's built-in tests ("x is defined"), the environment's globals (range, namespace, dict,
// cycler, joiner, raise_exception, strftime_now) and the iterator objects filters return.
#include <algorithm>
#include <cstring>
#include <ctime>

#include "core/chat/builtins.h"
#include "core/chat/interp.h"
#include "core/chat/pystr.h"

namespace inferdesk::chat {

// ---------------------------------------------------------------- iterators

namespace {

class IteratorObject : public Object {
 public:
  IteratorObject(std::string type, std::vector<Value> items, std::optional<EvalError> error, size_t error_at)
      : items_(std::move(items)), error_(std::move(error)), error_at_(error_at) {
    const size_t colon = type.find(':');  // "generator:do_map": type name and the function that made it
    type_ = type.substr(0, colon);
    qualname_ = colon == std::string::npos ? "" : type.substr(colon + 1);
  }

  std::string_view type_name() const override { return type_; }
  Value get_attr(std::string_view name) const override {
    return Value::undefined("'" + type_ + " object' has no attribute '" + std::string(name) + "'");
  }
  // Python prints an address here, which cannot match; the shape ("<generator object do_map at 0x...>")
  // does, for templates that count words or characters of it.
  void repr_into(std::string& out, int, size_t) const override {
    out += "<" + type_ + " object " + (qualname_.empty() ? "" : qualname_ + " ") + "at 0x7f0000000000>";
  }
  bool is_iterator() const override { return true; }
  std::vector<Value> drain() override {
    if (error_ && pos_ <= error_at_) {
      pos_ = items_.size();
      throw *error_;
    }
    std::vector<Value> rest(items_.begin() + static_cast<long>(std::min(pos_, items_.size())), items_.end());
    pos_ = items_.size();
    return rest;
  }
  std::optional<Value> next_item() override {
    if (error_ && pos_ == error_at_) {
      pos_ = items_.size();
      throw *error_;
    }
    if (pos_ >= items_.size()) return std::nullopt;
    return items_[pos_++];
  }
  void clear() override { items_.clear(); }

 private:
  std::string type_;
  std::string qualname_;
  std::vector<Value> items_;
  std::optional<EvalError> error_;
  size_t error_at_;
  size_t pos_ = 0;
};

}  // namespace

Value make_iterator(std::string type_name, std::vector<Value> items, std::optional<EvalError> error, size_t error_at) {
  return Value::object(
      std::make_shared<IteratorObject>(std::move(type_name), std::move(items), std::move(error), error_at));
}

// ---------------------------------------------------------------- tests

namespace {

using Args = CallArgs;

const Value& arg0(const Args& a, const char* test) {
  if (a.args.empty()) throw_type_error(std::string(test) + "() missing 1 required positional argument");
  return a.args[0];
}

bool t_defined(Interp&, const Value& v, Args&) { return !v.is_undefined(); }
bool t_undefined(Interp&, const Value& v, Args&) { return v.is_undefined(); }
bool t_none(Interp&, const Value& v, Args&) { return v.is_none(); }
bool t_boolean(Interp&, const Value& v, Args&) { return v.is_bool(); }
bool t_false(Interp&, const Value& v, Args&) { return v.is_bool() && !v.as_bool(); }
bool t_true(Interp&, const Value& v, Args&) { return v.is_bool() && v.as_bool(); }
bool t_integer(Interp&, const Value& v, Args&) { return v.is_int(); }
bool t_float(Interp&, const Value& v, Args&) { return v.is_float(); }
bool t_number(Interp&, const Value& v, Args&) { return v.is_number(); }
bool t_string(Interp&, const Value& v, Args&) { return v.is_string(); }
bool t_mapping(Interp&, const Value& v, Args&) { return v.is_dict(); }
bool t_escaped(Interp&, const Value& v, Args&) { return v.is_safe(); }

bool t_iterable(Interp&, const Value& v, Args&) {
  switch (v.kind()) {
    case Value::Kind::String:
    case Value::Kind::List:
    case Value::Kind::Dict:
    case Value::Kind::Undefined: return true;
    case Value::Kind::Object: return v.as_object().is_iterator() || v.as_object().type_name() == "LoopContext";
    default: return false;
  }
}

bool t_sequence(Interp&, const Value& v, Args&) {  // len() and __getitem__: dict views have no __getitem__
  return v.is_string() || v.is_sequence_list() || v.is_dict() || v.is_undefined();
}

bool t_callable(Interp&, const Value& v, Args&) { return v.is_callable() || v.is_undefined(); }

bool t_sameas(Interp&, const Value& v, Args& a) {
  const Value& other = arg0(a, "sameas");
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::None: return true;
    case Value::Kind::Bool: return v.as_bool() == other.as_bool();
    case Value::Kind::Int: return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    case Value::Kind::List: return v.list_ptr() == other.list_ptr();
    case Value::Kind::Dict: return &v.as_dict() == &other.as_dict();
    case Value::Kind::Function: return &v.as_function() == &other.as_function();
    case Value::Kind::Object: return &v.as_object() == &other.as_object();
    default: return false;
  }
}

bool t_in(Interp&, const Value& v, Args& a) { return contains(arg0(a, "in"), v); }
bool t_eq(Interp&, const Value& v, Args& a) { return compare_op(CmpOp::Eq, v, arg0(a, "eq")); }
bool t_ne(Interp&, const Value& v, Args& a) { return compare_op(CmpOp::Ne, v, arg0(a, "ne")); }
bool t_lt(Interp&, const Value& v, Args& a) { return compare_op(CmpOp::Lt, v, arg0(a, "lt")); }
bool t_le(Interp&, const Value& v, Args& a) { return compare_op(CmpOp::Le, v, arg0(a, "le")); }
bool t_gt(Interp&, const Value& v, Args& a) { return compare_op(CmpOp::Gt, v, arg0(a, "gt")); }
bool t_ge(Interp&, const Value& v, Args& a) { return compare_op(CmpOp::Ge, v, arg0(a, "ge")); }

bool t_odd(Interp& in, const Value& v, Args&) {
  return binary_op(BinOp::Mod, v, Value::integer(2), in) == Value::integer(1);
}
bool t_even(Interp& in, const Value& v, Args&) {
  return binary_op(BinOp::Mod, v, Value::integer(2), in) == Value::integer(0);
}
bool t_divisibleby(Interp& in, const Value& v, Args& a) {
  return binary_op(BinOp::Mod, v, arg0(a, "divisibleby"), in) == Value::integer(0);
}
bool t_lower(Interp&, const Value& v, Args&) { return py::is_lower_str(v.str()); }
bool t_upper(Interp&, const Value& v, Args&) { return py::is_upper_str(v.str()); }
bool t_filter(Interp&, const Value& v, Args&) { return v.is_string() && find_filter(v.as_string()); }
bool t_test(Interp&, const Value& v, Args&) { return v.is_string() && find_test(v.as_string()); }

constexpr TestDef kTests[] = {
    {"!=", t_ne},
    {"<", t_lt},
    {"<=", t_le},
    {"==", t_eq},
    {">", t_gt},
    {">=", t_ge},
    {"boolean", t_boolean},
    {"callable", t_callable},
    {"defined", t_defined},
    {"divisibleby", t_divisibleby},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"escaped", t_escaped},
    {"even", t_even},
    {"false", t_false},
    {"filter", t_filter},
    {"float", t_float},
    {"ge", t_ge},
    {"greaterthan", t_gt},
    {"gt", t_gt},
    {"in", t_in},
    {"integer", t_integer},
    {"iterable", t_iterable},
    {"le", t_le},
    {"lessthan", t_lt},
    {"lower", t_lower},
    {"lt", t_lt},
    {"mapping", t_mapping},
    {"ne", t_ne},
    {"none", t_none},
    {"number", t_number},
    {"odd", t_odd},
    {"sameas", t_sameas},
    {"sequence", t_sequence},
    {"string", t_string},
    {"test", t_test},
    {"true", t_true},
    {"undefined", t_undefined},
    {"upper", t_upper},
};

}  // namespace

const TestDef* find_test(std::string_view name) {
  for (const TestDef& t : kTests) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

// ---------------------------------------------------------------- globals

namespace {

class NamespaceObject : public Object {
 public:
  std::string_view type_name() const override { return "Namespace"; }
  bool is_namespace() const override { return true; }
  Value get_attr(std::string_view name) const override {
    if (const Value* v = attrs_.find(name)) return *v;
    return Value::undefined("'jinja2.utils.Namespace object' has no attribute '" + std::string(name) + "'");
  }
  bool set_attr(const std::string& name, Value value) override {
    attrs_.set(Value::string(name), std::move(value));
    return true;
  }
  void repr_into(std::string& out, int depth, size_t limit) const override {
    out += "<Namespace {";
    bool first = true;
    for (const auto& [k, v] : attrs_.items()) {
      if (!first) out += ", ";
      first = false;
      k.repr_into(out, depth + 1, limit);
      out += ": ";
      v.repr_into(out, depth + 1, limit);
    }
    out += "}>";
  }
  void clear() override { attrs_ = Dict(); }

 private:
  Dict attrs_;
};

class CyclerObject : public Object, public std::enable_shared_from_this<CyclerObject> {
 public:
  explicit CyclerObject(std::vector<Value> items) : items_(std::move(items)) {}
  std::string_view type_name() const override { return "Cycler"; }
  Value get_attr(std::string_view name) const override {
    auto self = std::const_pointer_cast<CyclerObject>(shared_from_this());
    if (name == "current") return items_[pos_];
    if (name == "next") {
      return Value::function("next", [self](Interp&, CallArgs&) {
        Value v = self->items_[self->pos_];
        self->pos_ = (self->pos_ + 1) % self->items_.size();
        return v;
      });
    }
    if (name == "reset") {
      return Value::function("reset", [self](Interp&, CallArgs&) {
        self->pos_ = 0;
        return Value::none();
      });
    }
    return Value::undefined("'jinja2.utils.Cycler object' has no attribute '" + std::string(name) + "'");
  }
  void clear() override { items_.assign(1, Value::none()); }

 private:
  std::vector<Value> items_;
  size_t pos_ = 0;
};

Value fn_range(Interp&, CallArgs& a) {
  if (!a.kwargs.empty()) throw_type_error("range() takes no keyword arguments");
  if (a.args.empty() || a.args.size() > 3)
    throw_type_error("range expected 1 to 3 arguments, got " + std::to_string(a.args.size()));
  int64_t p[3] = {0, 0, 1};
  for (size_t i = 0; i < a.args.size(); ++i) {
    if (!a.args[i].is_int() && !a.args[i].is_bool()) {
      throw_type_error("'" + a.args[i].type_name() + "' object cannot be interpreted as an integer");
    }
  }
  if (a.args.size() == 1) {
    p[1] = a.args[0].as_int();
  } else {
    p[0] = a.args[0].as_int();
    p[1] = a.args[1].as_int();
    if (a.args.size() == 3) p[2] = a.args[2].as_int();
  }
  if (p[2] == 0) throw EvalError(EvalErrorKind::Value, "range() arg 3 must not be zero");
  const auto span = static_cast<__int128>(p[1]) - p[0];
  __int128 count = 0;
  if ((p[2] > 0 && span > 0) || (p[2] < 0 && span < 0)) count = (span + p[2] + (p[2] > 0 ? -1 : 1)) / p[2];
  constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE
  if (count > kMaxRange) {
    throw EvalError(EvalErrorKind::Overflow,
                    "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  Value::List out;
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) out.push_back(Value::integer(p[0] + i * p[2]));
  return Value::list(std::move(out));
}

Value fn_dict(Interp&, CallArgs& a) {
  Dict d;
  if (a.args.size() > 1) throw_type_error("dict expected at most 1 argument, got " + std::to_string(a.args.size()));
  if (a.args.size() == 1) {
    const Value& src = a.args[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else {
      for (const Value& pair : iterate(src)) {
        std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2)
          throw EvalError(EvalErrorKind::Value, "dictionary update sequence element has wrong length");
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (auto& [k, v] : a.kwargs) d.set(Value::string(k), v);
  return Value::dict(std::move(d));
}

Value fn_namespace(Interp& in, CallArgs& a) {
  auto ns = std::make_shared<NamespaceObject>();
  in.track(ns);
  if (!a.args.empty()) {
    const Value init = fn_dict(in, a);
    for (const auto& [k, v] : init.as_dict().items()) ns->set_attr(k.str(), v);
    return Value::object(ns);
  }
  for (auto& [k, v] : a.kwargs) ns->set_attr(k, v);
  return Value::object(ns);
}

Value fn_cycler(Interp& in, CallArgs& a) {
  if (a.args.empty()) throw_type_error("at least one item has to be provided");
  auto c = std::make_shared<CyclerObject>(a.args);
  in.track(c);
  return Value::object(c);
}

Value fn_joiner(Interp&, CallArgs& a) {
  ArgReader r("joiner", a, {"sep"});
  const std::string sep = r.value_or(0, Value::string(", ")).str();
  auto used = std::make_shared<bool>(false);
  return Value::function("joiner", [sep, used](Interp&, CallArgs&) {
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return Value::string(sep);
  });
}

Value fn_raise_exception(Interp&, CallArgs& a) {
  ArgReader r("raise_exception", a, {"message"});
  if (!r.has(0)) throw_type_error("raise_exception() missing 1 required positional argument: 'message'");
  throw EvalError(EvalErrorKind::Raised, r.get(0)->str());
}

// datetime.strftime: %f, %z and %Z as Python writes them for a naive datetime, the rest by the C library.
Value fn_strftime_now(Interp& in, CallArgs& a) {
  ArgReader r("strftime_now", a, {"format"});
  if (!r.has(0) || !r.get(0)->is_string()) throw_type_error("strftime() argument 1 must be str");
  const std::string& fmt = r.get(0)->as_string();
  std::string prepared;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] == '%' && i + 1 < fmt.size()) {
      const char c = fmt[i + 1];
      if (c == 'f') {
        prepared += "000000";
        ++i;
        continue;
      }
      if (c == 'z' || c == 'Z') {
        ++i;
        continue;
      }
      prepared.push_back('%');
      prepared.push_back(c);
      ++i;
      continue;
    }
    prepared.push_back(fmt[i]);
  }
  if (prepared.empty()) return Value::string("");
  const std::tm tm = in.now();
  std::string buf(prepared.size() * 4 + 64, '\0');
  while (true) {
    const size_t n = std::strftime(buf.data(), buf.size(), prepared.c_str(), &tm);
    if (n > 0 || buf.size() > prepared.size() * 64 + 4096) {
      buf.resize(n);
      break;
    }
    buf.resize(buf.size() * 2);
  }
  in.check_size(buf.size());
  return Value::string(std::move(buf));
}

}  // namespace

std::vector<std::pair<std::string, Value>> make_globals() {
  return {
      {"range", Value::function("range", fn_range)},
      {"dict", Value::function("dict", fn_dict)},
      {"namespace", Value::function("namespace", fn_namespace)},
      {"cycler", Value::function("cycler", fn_cycler)},
      {"joiner", Value::function("joiner", fn_joiner)},
      {"raise_exception", Value::function("raise_exception", fn_raise_exception)},
      {"strftime_now", Value::function("strftime_now", fn_strftime_now)},
  };
}

}  // namespace inferdesk::chat
