// Expression evaluation and Python operator semantics.
#include <cmath>
#include <cstdint>

#include "core/chat/builtins.h"
#include "core/chat/interp.h"
#include "core/chat/pystr.h"
#include "core/chat/work.h"

namespace inferdesk::chat {

void fail_undefined(const Value& undefined) {
  const UndefinedInfo& info = undefined.undefined_info();
  if (info.unsafe) throw EvalError(EvalErrorKind::Security, info.message);
  throw EvalError(EvalErrorKind::Undefined, info.message.empty() ? "value is undefined" : info.message);
}

namespace {

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  throw_type_error(std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" +
                   b.type_name() + "'");
}

[[noreturn]] void overflow() { throw EvalError(EvalErrorKind::Overflow, "integer result too large"); }

bool both_int(const Value& a, const Value& b) { return (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool()); }

Value repeat(const Value& seq, int64_t times, const Interp& interp) {
  if (times < 0) times = 0;
  const size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size();
  if (times > 0 && unit > 0) {
    // unit * times without overflow: anything past SIZE_MAX / unit is over any limit anyway.
    const auto t = static_cast<uint64_t>(times);
    interp.check_size(t > SIZE_MAX / unit ? SIZE_MAX : unit * static_cast<size_t>(t));
    if (!seq.is_string()) {
      WorkMeter::check_list_size(t > UINT64_MAX / unit ? UINT64_MAX : t * unit);
      // A list's strings are copied by value: [big] * n costs n copies of big, in time and memory.
      size_t bytes = 0;
      for (const Value& v : seq.as_list()) bytes += v.is_string() ? v.as_string().size() : 0;
      if (bytes > 0) interp.check_size(t > SIZE_MAX / bytes ? SIZE_MAX : bytes * static_cast<size_t>(t));
      WorkMeter::charge(t > UINT64_MAX / unit ? UINT64_MAX : t * (unit + bytes / WorkMeter::kBytesPerStep));
    }
  }
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value::string(std::move(out), seq.is_safe());
  }
  const auto& items = seq.as_list();
  Value::List out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.is_tuple());
}

Value add(const Value& a, const Value& b, const Interp& interp) {
  if (a.is_number() && b.is_number()) {
    if (both_int(a, b)) {
      int64_t r;
      if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value::integer(r);
    }
    return Value::number(a.as_float() + b.as_float());
  }
  if (a.is_string() && b.is_string()) {
    // markupsafe: Markup + str escapes the str (and str + Markup likewise).
    const bool safe = a.is_safe() || b.is_safe();
    std::string left = (safe && !a.is_safe()) ? py::html_escape(a.as_string()) : a.as_string();
    const std::string right = (safe && !b.is_safe()) ? py::html_escape(b.as_string()) : b.as_string();
    interp.check_size(left.size() + right.size());
    left += right;
    return Value::string(std::move(left), safe);
  }
  if (a.is_sequence_list() && b.is_sequence_list() && a.is_tuple() == b.is_tuple()) {
    WorkMeter::check_list_size(a.as_list().size() + b.as_list().size());
    WorkMeter::charge_items(a.as_list());
    WorkMeter::charge_items(b.as_list());
    Value::List out = a.as_list();
    out.insert(out.end(), b.as_list().begin(), b.as_list().end());
    return Value::list(std::move(out), a.is_tuple());
  }
  if (a.is_string() && !a.is_safe()) {
    throw_type_error("can only concatenate str (not \"" + b.type_name() + "\") to str");
  }
  if (a.is_list()) {
    throw_type_error("can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
  }
  unsupported("+", a, b);
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value arith(BinOp op, const Value& a, const Value& b, const Interp& interp) {
  static constexpr const char* kNames[] = {"+", "-", "*", "/", "//", "%", "** or pow()"};
  const char* name = kNames[static_cast<int>(op)];
  if (op == BinOp::Mul) {
    if ((a.is_string() || a.is_sequence_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), interp);
    if ((b.is_string() || b.is_sequence_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), interp);
  }
  if (op == BinOp::Mod && a.is_string()) return Value::string(percent_format(a.as_string(), b), a.is_safe());
  if (!a.is_number() || !b.is_number()) {
    if (a.is_string() && (op == BinOp::Mul)) {
      throw_type_error("can't multiply sequence by non-int of type '" + b.type_name() + "'");
    }
    unsupported(name, a, b);
  }
  const bool ints = both_int(a, b);
  switch (op) {
    case BinOp::Sub: {
      if (!ints) return Value::number(a.as_float() - b.as_float());
      int64_t r;
      if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value::integer(r);
    }
    case BinOp::Mul: {
      if (!ints) return Value::number(a.as_float() * b.as_float());
      int64_t r;
      if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value::integer(r);
    }
    case BinOp::Div:
      if (b.as_float() == 0) throw EvalError(EvalErrorKind::ZeroDivision, "division by zero");
      return Value::number(a.as_float() / b.as_float());
    case BinOp::FloorDiv:
      if (ints) {
        if (b.as_int() == 0) throw EvalError(EvalErrorKind::ZeroDivision, "integer division or modulo by zero");
        if (a.as_int() == INT64_MIN && b.as_int() == -1) overflow();
        return Value::integer(floor_div(a.as_int(), b.as_int()));
      }
      if (b.as_float() == 0) throw EvalError(EvalErrorKind::ZeroDivision, "float floor division by zero");
      return Value::number(std::floor(a.as_float() / b.as_float()));
    case BinOp::Mod:
      if (ints) {
        if (b.as_int() == 0) throw EvalError(EvalErrorKind::ZeroDivision, "integer division or modulo by zero");
        if (b.as_int() == -1) return Value::integer(0);
        const int64_t r = a.as_int() % b.as_int();
        return Value::integer((r != 0 && ((r < 0) != (b.as_int() < 0))) ? r + b.as_int() : r);
      } else {
        if (b.as_float() == 0) throw EvalError(EvalErrorKind::ZeroDivision, "float modulo");
        double r = std::fmod(a.as_float(), b.as_float());
        if (r != 0 && ((r < 0) != (b.as_float() < 0))) r += b.as_float();
        return Value::number(r);
      }
    case BinOp::Pow: {
      if (ints && b.as_int() >= 0) {
        int64_t base = a.as_int(), e = b.as_int(), r = 1;
        while (e > 0) {
          if (e & 1) {
            if (__builtin_mul_overflow(r, base, &r)) overflow();
          }
          e >>= 1;
          if (e > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
        }
        return Value::integer(r);
      }
      if (a.as_float() == 0 && b.as_float() < 0) {
        throw EvalError(EvalErrorKind::ZeroDivision, "0.0 cannot be raised to a negative power");
      }
      return Value::number(std::pow(a.as_float(), b.as_float()));
    }
    default: unsupported(name, a, b);
  }
}

}  // namespace

Value binary_op(BinOp op, const Value& a, const Value& b, const Interp& interp) {
  if (op == BinOp::Mod && a.is_string() && b.is_undefined()) {  // str % Undefined formats (Undefined prints "")
    return Value::string(percent_format(a.as_string(), b), a.is_safe());
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (op == BinOp::Add) return add(a, b, interp);
  return arith(op, a, b, interp);
}

bool compare_op(CmpOp op, const Value& a, const Value& b) {
  switch (op) {
    case CmpOp::Eq: return a == b;
    case CmpOp::Ne: return !(a == b);
    case CmpOp::In: return contains(b, a);
    case CmpOp::NotIn: return !contains(b, a);
    default: break;
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  static constexpr const char* kOps[] = {"==", "!=", "<", "<=", ">", ">="};
  const int c = compare(a, b, kOps[static_cast<int>(op)]);
  if (c == 2) return false;  // NaN
  switch (op) {
    case CmpOp::Lt: return c < 0;
    case CmpOp::Le: return c <= 0;
    case CmpOp::Gt: return c > 0;
    case CmpOp::Ge: return c >= 0;
    default: return false;
  }
}

Value Interp::eval(const Expr& e, const ScopePtr& scope) {
  DepthGuard guard(*this);
  try {
    Value v = eval_inner(e, scope);
    // Strings are held by value: every result was copied or built at a cost that grows with it.
    if (v.is_string()) WorkMeter::charge_bytes(v.as_string().size());
    return v;
  } catch (EvalError& err) {
    if (!err.has_pos()) err.set_pos(e.pos.line, e.pos.col);
    throw;
  }
}

Value Interp::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::Const: return e.constant;
    case ExprKind::Name: return eval_name(e, scope);
    case ExprKind::List:
    case ExprKind::Tuple: {
      Value::List items;
      items.reserve(e.items.size());
      for (const ExprPtr& item : e.items) items.push_back(eval(*item, scope));
      return Value::list(std::move(items), e.kind == ExprKind::Tuple);
    }
    case ExprKind::Dict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) d.set(eval(*e.items[i], scope), eval(*e.items[i + 1], scope));
      return Value::dict(std::move(d));
    }
    case ExprKind::Getattr: {
      const Value obj = eval(*e.a, scope);
      if (obj.is_undefined()) fail_undefined(obj);
      return get_attribute(obj, e.name);
    }
    case ExprKind::Getitem: return eval_getitem(e, scope);
    case ExprKind::Slice: throw_type_error("slice used outside a subscript");
    case ExprKind::Call: return eval_call(e, scope, nullptr);
    case ExprKind::Filter: return eval_filter(e, eval(*e.a, scope), scope);
    case ExprKind::Test: return eval_test(e, scope);
    case ExprKind::Not: return Value::boolean(!eval(*e.a, scope).truthy());
    case ExprKind::Neg:
    case ExprKind::Pos: {
      const Value v = eval(*e.a, scope);
      if (v.is_undefined()) fail_undefined(v);
      const char* op = e.kind == ExprKind::Neg ? "-" : "+";
      if (!v.is_number())
        throw_type_error(std::string("bad operand type for unary ") + op + ": '" + v.type_name() + "'");
      if (v.is_float()) return Value::number(e.kind == ExprKind::Neg ? -v.as_float() : v.as_float());
      if (e.kind == ExprKind::Pos) return Value::integer(v.as_int());
      if (v.as_int() == INT64_MIN) throw EvalError(EvalErrorKind::Overflow, "integer result too large");
      return Value::integer(-v.as_int());
    }
    case ExprKind::Binary: return binary_op(e.binop, eval(*e.a, scope), eval(*e.b, scope), *this);
    case ExprKind::And: {
      Value left = eval(*e.a, scope);
      return left.truthy() ? eval(*e.b, scope) : left;
    }
    case ExprKind::Or: {
      Value left = eval(*e.a, scope);
      return left.truthy() ? left : eval(*e.b, scope);
    }
    case ExprKind::Concat: {
      std::string out;
      for (const ExprPtr& item : e.items) {
        const Value v = eval(*item, scope);
        out += v.is_string() ? v.as_string() : v.str(options_.limits.max_output_bytes);
        check_size(out.size());
      }
      return Value::string(std::move(out));
    }
    case ExprKind::Compare: return eval_compare(e, scope);
    case ExprKind::CondExpr: {
      if (eval(*e.a, scope).truthy()) return eval(*e.b, scope);
      if (e.c) return eval(*e.c, scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.pos.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

Value Interp::eval_name(const Expr& e, const ScopePtr& scope) {
  if (const Value* v = scope->lookup(e.name)) return *v;
  return Value::undefined("'" + e.name + "' is undefined");
}

namespace {
std::optional<int64_t> slice_bound(const Value& v) {
  if (v.is_none() || v.is_undefined()) return std::nullopt;
  if (v.is_int() || v.is_bool()) return v.as_int();
  throw_type_error("slice indices must be integers or None or have an __index__ method");
}
}  // namespace

Value Interp::eval_getitem(const Expr& e, const ScopePtr& scope) {
  const Value obj = eval(*e.a, scope);
  if (e.b->kind != ExprKind::Slice) {
    const Value key = eval(*e.b, scope);
    if (obj.is_undefined()) fail_undefined(obj);
    return get_item(obj, key);
  }
  Value parts[3];
  for (int i = 0; i < 3; ++i) {
    if (e.b->items[i]) parts[i] = eval(*e.b->items[i], scope);
  }
  if (obj.is_undefined()) fail_undefined(obj);
  // jinja2 compiles slices to plain Python subscription (no sandbox getitem): anything but a
  // sequence raises.
  if (obj.is_dict()) throw_type_error("unhashable type: 'slice'");
  if (!obj.is_string() && !obj.is_sequence_list())
    throw_type_error("'" + obj.type_name() + "' object is not subscriptable");
  const std::optional<int64_t> start = slice_bound(parts[0]), stop = slice_bound(parts[1]);
  const int64_t step = slice_bound(parts[2]).value_or(1);
  if (step == 0) throw EvalError(EvalErrorKind::Value, "slice step cannot be zero");
  if (obj.is_list()) {
    const auto& items = obj.as_list();
    Value::List out;
    for (size_t i : py::slice_indices(items.size(), start, stop, step)) out.push_back(items[i]);
    WorkMeter::charge_items(out);
    return Value::list(std::move(out), obj.is_tuple());
  }
  const std::string& s = obj.as_string();
  if (py::is_ascii(s)) {
    std::string out;
    for (size_t i : py::slice_indices(s.size(), start, stop, step)) out.push_back(s[i]);
    return Value::string(std::move(out), obj.is_safe());
  }
  const std::u32string cps = py::decode(s);
  std::u32string out;
  for (size_t i : py::slice_indices(cps.size(), start, stop, step)) out.push_back(cps[i]);
  return Value::string(py::encode(out), obj.is_safe());
}

CallArgs Interp::eval_args(const CallSpec& spec, const ScopePtr& scope) {
  CallArgs args;
  args.args.reserve(spec.args.size());
  for (const ExprPtr& a : spec.args) args.args.push_back(eval(*a, scope));
  if (spec.dyn_args) {
    for (Value& v : iterate(eval(*spec.dyn_args, scope))) args.args.push_back(std::move(v));
  }
  for (const Keyword& kw : spec.kwargs) args.kwargs.emplace_back(kw.name, eval(*kw.value, scope));
  if (spec.dyn_kwargs) {
    const Value d = eval(*spec.dyn_kwargs, scope);
    if (!d.is_dict()) throw_type_error("argument after ** must be a mapping, not " + d.type_name());
    for (const auto& [k, v] : d.as_dict().items()) {
      if (!k.is_string()) throw_type_error("keywords must be strings");
      args.kwargs.emplace_back(k.as_string(), v);
    }
  }
  return args;
}

Value Interp::eval_call(const Expr& e, const ScopePtr& scope, const Value* caller) {
  if (e.a->kind == ExprKind::Getattr && !caller) {
    const Value obj = eval(*e.a->a, scope);
    if (obj.is_undefined()) fail_undefined(obj);
    CallArgs args = eval_args(e.call, scope);
    Value result;
    if (call_method(*this, obj, e.a->name, args, &result)) return result;
    const Value callee = get_attribute(obj, e.a->name);
    return call_value(callee, args);
  }
  const Value callee = eval(*e.a, scope);
  CallArgs args = eval_args(e.call, scope);
  if (caller) args.kwargs.emplace_back("caller", *caller);
  return call_value(callee, args);
}

Value Interp::call_value(const Value& callee, CallArgs& args) {
  if (callee.is_function()) return callee.as_function().fn(*this, args);
  if (callee.is_object() && callee.as_object().callable()) return callee.as_object().call(*this, args);
  if (callee.is_undefined()) fail_undefined(callee);
  throw_type_error("'" + callee.type_name() + "' object is not callable");
}

Value Interp::eval_filter(const Expr& e, const Value& operand, const ScopePtr& scope) {
  if (!e.filter) throw EvalError(EvalErrorKind::Syntax, "No filter named '" + e.name + "'.");
  CallArgs args = eval_args(e.call, scope);
  if (!e.filter->fn) {
    throw EvalError(EvalErrorKind::Syntax, "the '" + e.name + "' filter is not supported by this renderer");
  }
  return e.filter->fn(*this, operand, args);
}

Value Interp::eval_test(const Expr& e, const ScopePtr& scope) {
  const Value operand = eval(*e.a, scope);
  if (!e.test) throw EvalError(EvalErrorKind::Syntax, "No test named '" + e.name + "'.");
  CallArgs args = eval_args(e.call, scope);
  return Value::boolean(e.test->fn(*this, operand, args));
}

Value Interp::eval_compare(const Expr& e, const ScopePtr& scope) {
  Value left = eval(*e.items[0], scope);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.items[i + 1], scope);
    if (!compare_op(e.ops[i], left, right)) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interp::apply_filter(std::string_view name, const Value& value, CallArgs& args) {
  const FilterDef* f = find_filter(name);
  if (!f) throw EvalError(EvalErrorKind::Syntax, "No filter named '" + std::string(name) + "'.");
  if (!f->fn) throw EvalError(EvalErrorKind::Syntax, "the '" + std::string(name) + "' filter is not supported");
  return f->fn(*this, value, args);
}

bool Interp::apply_test(std::string_view name, const Value& value, CallArgs& args) {
  const TestDef* t = find_test(name);
  if (!t) throw EvalError(EvalErrorKind::Syntax, "No test named '" + std::string(name) + "'.");
  return t->fn(*this, value, args);
}

}  // namespace inferdesk::chat
