#include "core/chat/interp.h"

#include <chrono>

#include "core/chat/builtins.h"
#include "core/chat/work.h"

namespace inferdesk::chat {

const Value* Scope::lookup(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    const auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

namespace {

ScopePtr child_of(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

[[noreturn]] void limit_error(const std::string& message) { throw EvalError(EvalErrorKind::Limit, message); }

// The `loop` variable of a {% for %}.
class LoopObject : public Object, public std::enable_shared_from_this<LoopObject> {
 public:
  using Recurse = std::function<std::string(Interp&, const Value&, size_t)>;
  LoopObject(std::shared_ptr<const Value::List> items, size_t depth0, Recurse recurse)
      : items_(std::move(items)), depth0_(depth0), recurse_(std::move(recurse)) {}

  size_t index0 = 0;

  std::string_view type_name() const override { return "LoopContext"; }
  void repr_into(std::string& out, int, size_t) const override {
    out += "<LoopContext " + std::to_string(index0 + 1) + "/" + std::to_string(items_->size()) + ">";
  }
  bool callable() const override { return static_cast<bool>(recurse_); }
  Value call(Interp& interp, CallArgs& args) override {
    if (!recurse_) return Object::call(interp, args);
    if (args.args.size() != 1 || !args.kwargs.empty()) {
      throw_type_error("loop() takes exactly one argument, the iterable to recurse into");
    }
    return Value::string(recurse_(interp, args.args[0], depth0_ + 1));
  }

  Value get_attr(std::string_view name) const override {
    const size_t n = items_->size();
    if (name == "index0") return Value::integer(static_cast<int64_t>(index0));
    if (name == "index") return Value::integer(static_cast<int64_t>(index0 + 1));
    if (name == "revindex") return Value::integer(static_cast<int64_t>(n - index0));
    if (name == "revindex0") return Value::integer(static_cast<int64_t>(n - index0 - 1));
    if (name == "first") return Value::boolean(index0 == 0);
    if (name == "last") return Value::boolean(index0 + 1 == n);
    if (name == "length") return Value::integer(static_cast<int64_t>(n));
    if (name == "depth") return Value::integer(static_cast<int64_t>(depth0_ + 1));
    if (name == "depth0") return Value::integer(static_cast<int64_t>(depth0_));
    if (name == "previtem") {
      return index0 == 0 ? Value::undefined("there is no previous item") : (*items_)[index0 - 1];
    }
    if (name == "nextitem") {
      return index0 + 1 >= n ? Value::undefined("there is no next item") : (*items_)[index0 + 1];
    }
    if (name == "cycle") {
      auto self = std::const_pointer_cast<LoopObject>(shared_from_this());
      return Value::function("cycle", [self](Interp&, CallArgs& a) {
        if (a.args.empty()) throw_type_error("no items for cycling given");
        return a.args[self->index0 % a.args.size()];
      });
    }
    if (name == "changed") {
      auto self = std::const_pointer_cast<LoopObject>(shared_from_this());
      return Value::function("changed", [self](Interp&, CallArgs& a) {
        Value current = Value::list(a.args);
        if (self->has_last_ && self->last_changed_ == current) return Value::boolean(false);
        self->last_changed_ = std::move(current);
        self->has_last_ = true;
        return Value::boolean(true);
      });
    }
    return Value::undefined("'LoopContext object' has no attribute '" + std::string(name) + "'");
  }

 private:
  std::shared_ptr<const Value::List> items_;
  size_t depth0_;
  Recurse recurse_;
  Value last_changed_;
  bool has_last_ = false;
};

}  // namespace

namespace {
constexpr uint32_t kMaxEvalDepth = 3000;
}

Interp::Interp(const RenderOptions& options) : options_(options) {}

Interp::~Interp() {
  for (auto& weak : objects_) {
    if (auto obj = weak.lock()) obj->clear();
  }
  for (auto& weak : closures_) {
    if (auto scope = weak.lock()) scope->vars.clear();
  }
}

void WorkMeter::exceeded() const {
  limit_error("chat template exceeded its work limit of " + std::to_string(limit_) +
              " steps: it computes far more than a chat prompt needs (a runaway macro recursion, loop or "
              "string growth); fix or replace the template (code embedding the renderer can raise "
              "RenderLimits::max_work_steps)");
}

void WorkMeter::check_list_size(uint64_t n) {
  const WorkMeter* m = current_;
  if (m && n > m->max_list_bytes_ / sizeof(Value)) {
    limit_error("a list of " + std::to_string(n) + " items exceeds the size limit of " +
                std::to_string(m->max_list_bytes_) + " bytes");
  }
}

void WorkMeter::charge_items(const Value::List& items) {
  size_t bytes = 0;
  for (const Value& v : items) bytes += v.is_string() ? v.as_string().size() : 0;
  charge(items.size() + bytes / kBytesPerStep);
}

Interp::DepthGuard::DepthGuard(Interp& in) : in_(in) {
  WorkMeter::charge(1);
  if (++in_.eval_depth_ > kMaxEvalDepth) {
    --in_.eval_depth_;
    limit_error("template evaluation nested too deeply");
  }
}

std::string Interp::render(const Body& body, std::vector<std::pair<std::string, Value>> context) {
  auto globals = std::make_shared<Scope>();
  for (auto& [name, value] : make_globals()) globals->vars[name] = std::move(value);
  auto ctx = child_of(globals);
  for (auto& [name, value] : context) ctx->vars[name] = std::move(value);
  auto root = child_of(ctx);
  std::string out;
  WorkMeter meter(options_.limits.max_work_steps, options_.limits.max_output_bytes);
  struct Record {  // the count also when the render fails
    const WorkMeter& meter;
    uint64_t& steps;
    ~Record() { steps = meter.used(); }
  } record{meter, work_steps_};
  exec(body, root, out);
  return out;
}

void Interp::check_size(size_t size) const {
  if (size > options_.limits.max_output_bytes) {
    limit_error("output or string size limit of " + std::to_string(options_.limits.max_output_bytes) +
                " bytes exceeded");
  }
}

void Interp::append(std::string& out, std::string_view text) const {
  check_size(out.size() + text.size());
  WorkMeter::charge_bytes(text.size());
  out.append(text);
}

std::tm Interp::now() const {
  if (options_.fixed_now) return *options_.fixed_now;
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

Interp::Flow Interp::exec(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const StmtPtr& s : body) {
    const Flow f = exec_stmt(*s, scope, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interp::Flow Interp::exec_stmt(const Stmt& s, const ScopePtr& scope, std::string& out) {
  DepthGuard guard(*this);
  try {
    switch (s.kind) {
      case StmtKind::Data: append(out, s.text); break;
      case StmtKind::Output: {
        const Value v = eval(*s.expr, scope);
        if (v.is_string()) {
          append(out, v.as_string());
        } else {
          append(out, v.str(options_.limits.max_output_bytes));
        }
        break;
      }
      case StmtKind::If: return exec_if(s, scope, out);
      case StmtKind::For: exec_for(s, scope, out); break;
      case StmtKind::Set: assign(s.target, eval(*s.expr, scope), scope); break;
      case StmtKind::SetBlock: exec_set_block(s, scope); break;
      case StmtKind::Macro: scope->vars[s.macro->name] = make_macro(s.macro, scope); break;
      case StmtKind::CallBlock: exec_call_block(s, scope, out); break;
      case StmtKind::FilterBlock: {
        std::string buf;
        exec(s.body, child_of(scope), buf);
        const Value v = apply_filter_chain(s.filters, Value::string(std::move(buf)), scope);
        append(out, v.str());
        break;
      }
      case StmtKind::With: {
        auto inner = child_of(scope);
        for (const auto& [target, expr] : s.assigns) assign(target, eval(*expr, scope), inner);
        return exec(s.body, inner, out);
      }
      case StmtKind::Scoped: exec(s.body, child_of(scope), out); break;
      case StmtKind::Break: return Flow::Break;
      case StmtKind::Continue: return Flow::Continue;
    }
  } catch (EvalError& e) {
    if (!e.has_pos()) e.set_pos(s.pos.line, s.pos.col);
    throw;
  }
  return Flow::Normal;
}

Interp::Flow Interp::exec_if(const Stmt& s, const ScopePtr& scope, std::string& out) {
  for (const auto& [test, body] : s.branches) {
    if (eval(*test, scope).truthy()) return exec(body, scope, out);
  }
  return exec(s.else_body, scope, out);
}

void Interp::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  const Value iterable = eval(*s.expr, scope);
  append(out, run_loop(s, scope, iterable, 0));
}

std::string Interp::run_loop(const Stmt& s, const ScopePtr& scope, const Value& iterable, size_t depth0) {
  std::vector<Value> items = iterate(iterable);
  if (s.loop_filter) {
    std::vector<Value> kept;
    for (Value& item : items) {
      auto filter_scope = child_of(scope);
      assign(s.target, item, filter_scope);
      if (eval(*s.loop_filter, filter_scope).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  std::string out;
  if (items.empty()) {
    exec(s.else_body, child_of(scope), out);
    return out;
  }
  auto shared_items = std::make_shared<const Value::List>(std::move(items));
  LoopObject::Recurse recurse;
  if (s.recursive) {
    recurse = [&s, scope](Interp& interp, const Value& it, size_t depth) {
      return interp.run_loop(s, scope, it, depth);
    };
  }
  auto loop = std::make_shared<LoopObject>(shared_items, depth0, std::move(recurse));
  const Value loop_value = Value::object(loop);
  for (size_t i = 0; i < shared_items->size(); ++i) {
    if (++iterations_ > options_.limits.max_loop_iterations) {
      limit_error("loop iteration limit of " + std::to_string(options_.limits.max_loop_iterations) + " reached");
    }
    // jinja2 gives every iteration a fresh scope: what one iteration sets, the next does not see.
    auto iteration = child_of(scope);
    loop->index0 = i;
    assign(s.target, (*shared_items)[i], iteration);
    iteration->vars["loop"] = loop_value;
    if (exec(s.body, iteration, out) == Flow::Break) break;
  }
  return out;
}

void Interp::assign(const Target& t, Value value, const ScopePtr& scope) {
  switch (t.kind) {
    case Target::Kind::Name: scope->vars[t.names[0]] = std::move(value); return;
    case Target::Kind::Tuple: {
      std::vector<Value> parts = iterate(value);
      if (parts.size() > t.names.size()) {
        throw EvalError(EvalErrorKind::Value,
                        "too many values to unpack (expected " + std::to_string(t.names.size()) + ")");
      }
      if (parts.size() < t.names.size()) {
        throw EvalError(EvalErrorKind::Value, "not enough values to unpack (expected " +
                                                  std::to_string(t.names.size()) + ", got " +
                                                  std::to_string(parts.size()) + ")");
      }
      for (size_t i = 0; i < parts.size(); ++i) scope->vars[t.names[i]] = std::move(parts[i]);
      return;
    }
    case Target::Kind::NamespaceAttr: {
      const Value* ns = scope->lookup(t.names[0]);
      if (!ns || !ns->is_object() || !ns->as_object().set_attr(t.attr, std::move(value))) {
        throw EvalError(EvalErrorKind::Type, "cannot assign attribute on non-namespace object");
      }
      return;
    }
  }
}

Value Interp::apply_filter_chain(const std::vector<ExprPtr>& filters, Value value, const ScopePtr& scope) {
  for (const ExprPtr& f : filters) value = eval_filter(*f, value, scope);
  return value;
}

void Interp::exec_set_block(const Stmt& s, const ScopePtr& scope) {
  std::string buf;
  exec(s.body, child_of(scope), buf);
  assign(s.target, apply_filter_chain(s.filters, Value::string(std::move(buf)), scope), scope);
}

void Interp::exec_call_block(const Stmt& s, const ScopePtr& scope, std::string& out) {
  const Value caller = make_macro(s.macro, scope);
  const Value v = eval_call(*s.expr, scope, &caller);
  append(out, v.str());
}

Value Interp::make_macro(std::shared_ptr<const MacroDef> def, ScopePtr closure) {
  const std::string name = def->name;
  closures_.push_back(closure);
  return Value::function(
      name,
      [def = std::move(def), closure = std::move(closure)](Interp& interp, CallArgs& args) {
        return interp.invoke_macro(*def, closure, args);
      },
      true);
}

Value Interp::invoke_macro(const MacroDef& def, const ScopePtr& closure, CallArgs& args) {
  if (call_depth_ >= options_.limits.max_call_depth) {
    limit_error("macro call depth limit of " + std::to_string(options_.limits.max_call_depth) + " reached in '" +
                def.name + "'");
  }
  WorkMeter::charge(WorkMeter::kCallSteps);
  struct CallGuard {
    uint32_t& d;
    explicit CallGuard(uint32_t& depth) : d(depth) { ++d; }
    ~CallGuard() { --d; }
  } guard(call_depth_);

  auto scope = child_of(closure);
  std::vector<bool> bound(def.params.size(), false);
  Value::List varargs;
  for (size_t i = 0; i < args.args.size(); ++i) {
    if (i < def.params.size()) {
      scope->vars[def.params[i]] = args.args[i];
      bound[i] = true;
    } else {
      varargs.push_back(args.args[i]);
    }
  }
  Dict kwargs;
  for (auto& [name, value] : args.kwargs) {
    size_t idx = 0;
    while (idx < def.params.size() && def.params[idx] != name) ++idx;
    if (idx < def.params.size()) {
      if (bound[idx]) {
        throw_type_error("macro '" + def.name + "' got multiple values for argument '" + name + "'");
      }
      scope->vars[name] = value;
      bound[idx] = true;
    } else if (name == "caller") {
      scope->vars["caller"] = value;
    } else {
      kwargs.set(Value::string(name), value);
    }
  }
  for (size_t i = 0; i < def.params.size(); ++i) {
    if (bound[i]) continue;
    scope->vars[def.params[i]] = def.defaults[i]
                                     ? eval(*def.defaults[i], scope)
                                     : Value::undefined("parameter '" + def.params[i] + "' was not provided");
  }
  scope->vars["varargs"] = Value::list(std::move(varargs), true);
  scope->vars["kwargs"] = Value::dict(std::move(kwargs));
  std::string out;
  exec(def.body, scope, out);
  return Value::string(std::move(out));
}

}  // namespace inferdesk::chat
