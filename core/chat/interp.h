// The evaluator of the chat-template renderer (internal): runs a parsed template over Values.
//
// Scoping follows jinja2: every {% for %} iteration, macro call, {% with %}, block {% set %} and
// {% generation %} body gets its own scope (assignments inside neither leak out nor carry over to
// the next iteration; reads fall through to the enclosing scopes), {% if %} does not.
#pragma once

#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/ast.h"
#include "core/chat/chat_template.h"
#include "core/chat/value.h"

namespace inferdesk::chat {

struct Scope {
  std::shared_ptr<Scope> parent;
  std::map<std::string, Value, std::less<>> vars;

  const Value* lookup(std::string_view name) const;
};
using ScopePtr = std::shared_ptr<Scope>;

class Interp {
 public:
  explicit Interp(const RenderOptions& options);
  ~Interp();  // breaks reference cycles (namespaces and macro scopes that refer to themselves)
  Interp(const Interp&) = delete;
  Interp& operator=(const Interp&) = delete;

  // Renders body with `context` as the template variables (over the environment's globals).
  std::string render(const Body& body, std::vector<std::pair<std::string, Value>> context);

  // Evaluates an expression (interp_expr.cpp).
  Value eval(const Expr& e, const ScopePtr& scope);

  // ---- services for the builtins
  Value call_value(const Value& callee, CallArgs& args);
  Value apply_filter(std::string_view name, const Value& value, CallArgs& args);
  bool apply_test(std::string_view name, const Value& value, CallArgs& args);
  // Throws a Limit error when a string or list of `size` bytes/items would exceed the output bound.
  void check_size(size_t size) const;
  size_t max_text_bytes() const { return options_.limits.max_output_bytes; }
  std::tm now() const;
  uint64_t work_steps() const { return work_steps_; }
  // Objects that may end up in reference cycles; cleared when the render ends.
  void track(const std::shared_ptr<Object>& obj) { objects_.push_back(obj); }

 private:
  enum class Flow { Normal, Break, Continue };

  // statements (interp.cpp)
  Flow exec(const Body& body, const ScopePtr& scope, std::string& out);
  Flow exec_stmt(const Stmt& s, const ScopePtr& scope, std::string& out);
  Flow exec_if(const Stmt& s, const ScopePtr& scope, std::string& out);
  void exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  std::string run_loop(const Stmt& s, const ScopePtr& scope, const Value& iterable, size_t depth0);
  void exec_set_block(const Stmt& s, const ScopePtr& scope);
  void exec_call_block(const Stmt& s, const ScopePtr& scope, std::string& out);
  void assign(const Target& t, Value value, const ScopePtr& scope);
  Value apply_filter_chain(const std::vector<ExprPtr>& filters, Value value, const ScopePtr& scope);
  Value make_macro(std::shared_ptr<const MacroDef> def, ScopePtr closure);
  Value invoke_macro(const MacroDef& def, const ScopePtr& closure, CallArgs& args);
  void append(std::string& out, std::string_view text) const;

  // expressions (interp_expr.cpp)
  Value eval_inner(const Expr& e, const ScopePtr& scope);
  Value eval_name(const Expr& e, const ScopePtr& scope);
  Value eval_getitem(const Expr& e, const ScopePtr& scope);
  Value eval_call(const Expr& e, const ScopePtr& scope, const Value* caller);
  Value eval_filter(const Expr& e, const Value& operand, const ScopePtr& scope);
  Value eval_test(const Expr& e, const ScopePtr& scope);
  Value eval_compare(const Expr& e, const ScopePtr& scope);
  CallArgs eval_args(const CallSpec& spec, const ScopePtr& scope);

  // Every guarded frame is one step of work (work.h).
  struct DepthGuard {
    explicit DepthGuard(Interp& in);
    ~DepthGuard() { --in_.eval_depth_; }
    Interp& in_;
  };

  const RenderOptions& options_;
  uint64_t iterations_ = 0;
  uint64_t work_steps_ = 0;  // what the last render's meter counted
  uint32_t call_depth_ = 0;
  uint32_t eval_depth_ = 0;  // nested eval/exec frames: bounded so the C++ stack cannot run out
  std::vector<std::weak_ptr<Object>> objects_;
  std::vector<std::weak_ptr<Scope>> closures_;
};

// Arithmetic and comparison with Python semantics (interp_expr.cpp); used by filters too.
Value binary_op(BinOp op, const Value& a, const Value& b, const Interp& interp);
bool compare_op(CmpOp op, const Value& a, const Value& b);
// Raises the error an Undefined stands for (UndefinedError, or SecurityError for unsafe attributes).
[[noreturn]] void fail_undefined(const Value& undefined);

}  // namespace inferdesk::chat
