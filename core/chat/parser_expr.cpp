// Expressions, with jinja2's grammar and precedence.
#include <optional>

#include "core/chat/builtins.h"
#include "core/chat/parser_impl.h"

namespace inferdesk::chat {

bool Parser::is_tuple_end(std::initializer_list<std::string_view> extra_end) const {
  const Token& t = cur();
  if (t.type == TokType::VarEnd || t.type == TokType::BlockEnd || t.type == TokType::Eof) return true;
  if (t.type == TokType::Op && t.op == OpKind::RParen) return true;
  if (t.type == TokType::Name) {
    for (auto e : extra_end) {
      if (t.text == e) return true;
    }
  }
  return false;
}

ExprPtr Parser::parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                            bool explicit_parens) {
  const SrcPos pos = pos_of(cur());
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(OpKind::Comma, ",");
    if (is_tuple_end(extra_end)) break;
    items.push_back(parse_expression(with_condexpr));
    if (is_op(OpKind::Comma)) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) fail("Expected an expression, got " + describe(cur()));
  }
  auto e = make(ExprKind::Tuple, pos);
  e->items = std::move(items);
  return e;
}

ExprPtr Parser::parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

ExprPtr Parser::parse_condexpr() {
  DepthGuard guard(*this);
  const size_t pending_mark = pending_.size();
  ExprPtr expr1 = parse_or();
  while (is_name("if")) {
    const SrcPos pos = pos_of(cur());
    next();
    const bool saved = soft_;
    soft_ = true;
    // The whole inline if is a soft frame in jinja2: unknown filters in it fail only when run.
    pending_.erase(pending_.begin() + static_cast<long>(pending_mark), pending_.end());
    auto e = make(ExprKind::CondExpr, pos);
    e->a = parse_or();
    if (skip_name("else")) e->c = parse_condexpr();
    soft_ = saved;
    e->b = std::move(expr1);
    expr1 = std::move(e);
  }
  return expr1;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    auto e = make(ExprKind::Or, pos_of(cur()));
    next();
    e->a = std::move(left);
    e->b = parse_and();
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    auto e = make(ExprKind::And, pos_of(cur()));
    next();
    e->a = std::move(left);
    e->b = parse_not();
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(*this);
    auto e = make(ExprKind::Not, pos_of(cur()));
    next();
    e->a = parse_not();
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const SrcPos pos = pos_of(cur());
  ExprPtr first = parse_math1();
  std::vector<CmpOp> ops;
  std::vector<ExprPtr> operands;
  while (true) {
    const Token& t = cur();
    std::optional<CmpOp> op;
    if (t.type == TokType::Op) {
      switch (t.op) {
        case OpKind::Eq: op = CmpOp::Eq; break;
        case OpKind::Ne: op = CmpOp::Ne; break;
        case OpKind::Lt: op = CmpOp::Lt; break;
        case OpKind::Le: op = CmpOp::Le; break;
        case OpKind::Gt: op = CmpOp::Gt; break;
        case OpKind::Ge: op = CmpOp::Ge; break;
        default: break;
      }
      if (op) next();
    } else if (is_name("in")) {
      op = CmpOp::In;
      next();
    } else if (is_name("not") && peek().type == TokType::Name && peek().text == "in") {
      op = CmpOp::NotIn;
      next();
      next();
    }
    if (!op) break;
    ops.push_back(*op);
    operands.push_back(parse_math1());
  }
  if (ops.empty()) return first;
  auto e = make(ExprKind::Compare, pos);
  e->items.push_back(std::move(first));
  for (auto& o : operands) e->items.push_back(std::move(o));
  e->ops = std::move(ops);
  return e;
}

ExprPtr Parser::binary(BinOp op, ExprPtr left, ExprPtr right, SrcPos pos) {
  auto e = make(ExprKind::Binary, pos);
  e->binop = op;
  e->a = std::move(left);
  e->b = std::move(right);
  return e;
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op(OpKind::Add) || is_op(OpKind::Sub)) {
    const BinOp op = cur().op == OpKind::Add ? BinOp::Add : BinOp::Sub;
    const SrcPos pos = pos_of(cur());
    next();
    left = binary(op, std::move(left), parse_concat(), pos);
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  const SrcPos pos = pos_of(cur());
  ExprPtr first = parse_math2();
  if (!is_op(OpKind::Tilde)) return first;
  auto e = make(ExprKind::Concat, pos);
  e->items.push_back(std::move(first));
  while (skip_op(OpKind::Tilde)) e->items.push_back(parse_math2());
  return e;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (true) {
    std::optional<BinOp> op;
    if (is_op(OpKind::Mul)) op = BinOp::Mul;
    if (is_op(OpKind::Div)) op = BinOp::Div;
    if (is_op(OpKind::FloorDiv)) op = BinOp::FloorDiv;
    if (is_op(OpKind::Mod)) op = BinOp::Mod;
    if (!op) return left;
    const SrcPos pos = pos_of(cur());
    next();
    left = binary(*op, std::move(left), parse_pow(), pos);
  }
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op(OpKind::Pow)) {
    const SrcPos pos = pos_of(cur());
    next();
    left = binary(BinOp::Pow, std::move(left), parse_unary(true), pos);
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  DepthGuard guard(*this);
  ExprPtr node;
  if (is_op(OpKind::Sub) || is_op(OpKind::Add)) {
    node = make(cur().op == OpKind::Sub ? ExprKind::Neg : ExprKind::Pos, pos_of(cur()));
    next();
    node->a = parse_unary(false);
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& t = cur();
  const SrcPos pos = pos_of(t);
  if (t.type == TokType::Name) {
    auto e = make(ExprKind::Const, pos);
    if (t.text == "true" || t.text == "True") {
      e->constant = Value::boolean(true);
    } else if (t.text == "false" || t.text == "False") {
      e->constant = Value::boolean(false);
    } else if (t.text == "none" || t.text == "None") {
      e->constant = Value::none();
    } else {
      e->kind = ExprKind::Name;
      e->name = t.text;
    }
    next();
    return e;
  }
  if (t.type == TokType::String) {
    std::string s;
    while (cur().type == TokType::String) {
      s += cur().text;
      next();
    }
    auto e = make(ExprKind::Const, pos);
    e->constant = Value::string(std::move(s));
    return e;
  }
  if (t.type == TokType::Integer || t.type == TokType::Float) {
    auto e = make(ExprKind::Const, pos);
    e->constant = t.type == TokType::Integer ? Value::integer(t.ival) : Value::number(t.fval);
    next();
    return e;
  }
  if (is_op(OpKind::LParen)) {
    next();
    ExprPtr e = parse_tuple(true, {}, true);
    expect_op(OpKind::RParen, ")");
    return e;
  }
  if (is_op(OpKind::LBracket)) return parse_list();
  if (is_op(OpKind::LBrace)) return parse_dict();
  fail("unexpected " + describe(t));
}

ExprPtr Parser::parse_list() {
  auto e = make(ExprKind::List, pos_of(cur()));
  next();
  while (!is_op(OpKind::RBracket)) {
    if (!e->items.empty()) expect_op(OpKind::Comma, ",");
    if (is_op(OpKind::RBracket)) break;
    e->items.push_back(parse_expression(true));
  }
  expect_op(OpKind::RBracket, "]");
  return e;
}

ExprPtr Parser::parse_dict() {
  auto e = make(ExprKind::Dict, pos_of(cur()));
  next();
  while (!is_op(OpKind::RBrace)) {
    if (!e->items.empty()) expect_op(OpKind::Comma, ",");
    if (is_op(OpKind::RBrace)) break;
    e->items.push_back(parse_expression(true));
    expect_op(OpKind::Colon, ":");
    e->items.push_back(parse_expression(true));
  }
  expect_op(OpKind::RBrace, "}");
  return e;
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(OpKind::Dot) || is_op(OpKind::LBracket)) {
      node = parse_subscript(std::move(node));
    } else if (is_op(OpKind::LParen)) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op(OpKind::Pipe)) {
      next();
      node = parse_one_filter(std::move(node));
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op(OpKind::LParen)) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token& t = cur();
  const SrcPos pos = pos_of(t);
  if (t.op == OpKind::Dot) {
    next();
    const Token& attr = cur();
    if (attr.type == TokType::Name) {
      auto e = make(ExprKind::Getattr, pos);
      e->a = std::move(node);
      e->name = attr.text;
      next();
      return e;
    }
    if (attr.type != TokType::Integer) fail("expected name or number");
    auto e = make(ExprKind::Getitem, pos);
    e->a = std::move(node);
    e->b = make(ExprKind::Const, pos_of(attr));
    e->b->constant = Value::integer(attr.ival);
    next();
    return e;
  }
  next();  // [
  std::vector<ExprPtr> args;
  while (!is_op(OpKind::RBracket)) {
    if (!args.empty()) expect_op(OpKind::Comma, ",");
    args.push_back(parse_subscribed());
  }
  expect_op(OpKind::RBracket, "]");
  auto e = make(ExprKind::Getitem, pos);
  e->a = std::move(node);
  if (args.size() == 1) {
    e->b = std::move(args[0]);
  } else {
    e->b = make(ExprKind::Tuple, pos);
    e->b->items = std::move(args);
  }
  return e;
}

ExprPtr Parser::parse_subscribed() {
  const SrcPos pos = pos_of(cur());
  std::vector<ExprPtr> parts;
  if (is_op(OpKind::Colon)) {
    next();
    parts.push_back(nullptr);
  } else {
    ExprPtr node = parse_expression(true);
    if (!is_op(OpKind::Colon)) return node;
    next();
    parts.push_back(std::move(node));
  }
  if (is_op(OpKind::Colon)) {
    parts.push_back(nullptr);
  } else if (!is_op(OpKind::RBracket) && !is_op(OpKind::Comma)) {
    parts.push_back(parse_expression(true));
  } else {
    parts.push_back(nullptr);
  }
  if (skip_op(OpKind::Colon)) {
    parts.push_back((!is_op(OpKind::RBracket) && !is_op(OpKind::Comma)) ? parse_expression(true) : nullptr);
  } else {
    parts.push_back(nullptr);
  }
  auto e = make(ExprKind::Slice, pos);
  e->items = std::move(parts);
  return e;
}

CallSpec Parser::parse_call_args() {
  CallSpec spec;
  expect_op(OpKind::LParen, "(");
  bool first = true;
  while (!is_op(OpKind::RParen)) {
    if (!first) {
      expect_op(OpKind::Comma, ",");
      if (is_op(OpKind::RParen)) break;
    }
    first = false;
    if (is_op(OpKind::Mul)) {
      if (spec.dyn_args || spec.dyn_kwargs) fail("invalid syntax for function call expression");
      next();
      spec.dyn_args = parse_expression(true);
    } else if (is_op(OpKind::Pow)) {
      if (spec.dyn_kwargs) fail("invalid syntax for function call expression");
      next();
      spec.dyn_kwargs = parse_expression(true);
    } else if (cur().type == TokType::Name && peek().type == TokType::Op && peek().op == OpKind::Assign) {
      if (spec.dyn_kwargs) fail("invalid syntax for function call expression");
      Keyword kw;
      kw.name = cur().text;
      next();
      next();
      kw.value = parse_expression(true);
      spec.kwargs.push_back(std::move(kw));
    } else {
      if (spec.dyn_args || spec.dyn_kwargs || !spec.kwargs.empty()) {
        fail("invalid syntax for function call expression");
      }
      spec.args.push_back(parse_expression(true));
    }
  }
  expect_op(OpKind::RParen, ")");
  return spec;
}

SrcPos Parser::leftmost(const Expr& e) {
  const Expr* p = &e;
  while ((p->kind == ExprKind::Getattr || p->kind == ExprKind::Getitem || p->kind == ExprKind::Call) && p->a) {
    p = p->a.get();
  }
  return p->pos;
}

ExprPtr Parser::parse_call(ExprPtr node) {
  auto e = make(ExprKind::Call, leftmost(*node));
  e->call = parse_call_args();
  e->a = std::move(node);
  return e;
}

std::string Parser::parse_dotted_name() {
  std::string name = expect_name();
  while (is_op(OpKind::Dot)) {
    next();
    name += "." + expect_name();
  }
  return name;
}

void Parser::unknown(const char* what, const std::string& name, SrcPos pos) {
  const std::string message = std::string("No ") + what + " named '" + name + "'.";
  if (!soft_) pending_.push_back(Pending{message, pos});
}

ExprPtr Parser::parse_one_filter(ExprPtr operand) {
  auto e = make(ExprKind::Filter, pos_of(cur()));
  e->name = parse_dotted_name();
  e->filter = find_filter(e->name);
  if (!e->filter) unknown("filter", e->name, e->pos);
  if (is_op(OpKind::LParen)) e->call = parse_call_args();
  e->a = std::move(operand);
  return e;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  const SrcPos pos = pos_of(cur());
  next();  // is
  const bool negated = skip_name("not");
  auto e = make(ExprKind::Test, pos);
  e->name = parse_dotted_name();
  e->test = find_test(e->name);
  if (!e->test) unknown("test", e->name, e->pos);
  const Token& t = cur();
  if (is_op(OpKind::LParen)) {
    e->call = parse_call_args();
  } else if ((t.type == TokType::Name || t.type == TokType::String || t.type == TokType::Integer ||
              t.type == TokType::Float || is_op(OpKind::LParen) || is_op(OpKind::LBracket) || is_op(OpKind::LBrace)) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) fail("You cannot chain multiple tests with is");
    e->call.args.push_back(parse_postfix(parse_primary()));
  }
  e->a = std::move(node);
  if (!negated) return e;
  auto n = make(ExprKind::Not, pos);
  n->a = std::move(e);
  return n;
}

}  // namespace inferdesk::chat
