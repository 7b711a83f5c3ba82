// Syntax tree of a parsed chat template (jinja2's node set, reduced to what the renderer runs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/chat/value.h"

namespace inferdesk::chat {

struct SrcPos {
  uint32_t line = 0;
  uint32_t col = 0;
};

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  Const,     // constant
  Name,      // name
  List,      // items
  Tuple,     // items
  Dict,      // items: key, value, key, value, ...
  Getattr,   // a . name
  Getitem,   // a [ b ]
  Slice,     // items[0..2] = start, stop, step (each may be null)
  Call,      // a ( call )
  Filter,    // a | name ( call ); a is null inside {% filter %} / {% set x | f %}
  Test,      // a is name ( call )
  Not,       // not a
  Neg,       // -a
  Pos,       // +a
  Binary,    // a binop b
  And,       // a and b
  Or,        // a or b
  Concat,    // items joined with ~
  Compare,   // items[0] ops[0] items[1] ops[1] items[2] ...
  CondExpr,  // b if a else c (c may be null)
};

enum class BinOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
enum class CmpOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Keyword {
  std::string name;
  ExprPtr value;
};

struct CallSpec {
  std::vector<ExprPtr> args;
  std::vector<Keyword> kwargs;
  ExprPtr dyn_args;    // *args
  ExprPtr dyn_kwargs;  // **kwargs
};

struct FilterDef;  // builtins.h
struct TestDef;

struct Expr {
  ExprKind kind;
  SrcPos pos;
  Value constant;
  std::string name;
  std::vector<ExprPtr> items;
  ExprPtr a, b, c;
  CallSpec call;
  std::vector<CmpOp> ops;
  BinOp binop = BinOp::Add;
  const FilterDef* filter = nullptr;  // resolved at parse time; null: unknown (fails when run)
  const TestDef* test = nullptr;
};

// Assignment target of for / set / with.
struct Target {
  enum class Kind : uint8_t { Name, Tuple, NamespaceAttr } kind = Kind::Name;
  std::vector<std::string> names;  // Name: one; Tuple: several; NamespaceAttr: the namespace variable
  std::string attr;                // NamespaceAttr
  SrcPos pos;
};

struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // aligned with params; null where there is no default
  Body body;
};

enum class StmtKind : uint8_t {
  Data,         // text
  Output,       // {{ expr }}
  If,           // branches (test, body); else_body
  For,          // target in expr [if loop_filter] body else_body
  Set,          // target = expr
  SetBlock,     // {% set target [| filters] %} body {% endset %}
  Macro,        // macro
  CallBlock,    // {% call(macro.params) expr %} macro.body {% endcall %}
  FilterBlock,  // {% filter filters %} body {% endfilter %}
  With,         // {% with assigns %} body {% endwith %}
  Scoped,       // {% generation %} body {% endgeneration %}: the body in its own scope
  Break,
  Continue,
};

struct Stmt {
  StmtKind kind;
  SrcPos pos;
  std::string text;
  ExprPtr expr;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  Target target;
  ExprPtr loop_filter;
  bool recursive = false;
  std::vector<ExprPtr> filters;  // Filter exprs with a == null, applied in order
  std::shared_ptr<MacroDef> macro;
  std::vector<std::pair<Target, ExprPtr>> assigns;
};

}  // namespace inferdesk::chat
