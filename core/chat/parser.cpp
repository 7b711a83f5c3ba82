#include "core/chat/parser.h"

#include <algorithm>

#include "core/chat/builtins.h"

namespace inferdesk::chat {

namespace {

constexpr int kMaxNesting = 200;  // expression and block nesting; beyond this the stack is at risk

class Parser {
 public:
  explicit Parser(const std::vector<Token>& toks) : toks_(toks) {}

  Body run() {
    Body body = subparse({}, "");
    if (!pending_.empty()) {
      const auto& p = pending_.front();
      throw SyntaxError(p.message, p.pos.line, p.pos.col);
    }
    return body;
  }

 private:
  struct Pending {
    std::string message;
    SrcPos pos;
  };

  // ---------------------------------------------------------------- token helpers
  const Token& cur() const { return toks_[i_]; }
  const Token& peek(size_t k = 1) const { return toks_[std::min(i_ + k, toks_.size() - 1)]; }
  void next() {
    if (i_ + 1 < toks_.size()) ++i_;
  }
  static SrcPos pos_of(const Token& t) { return SrcPos{t.line, t.col}; }
  bool is_name(std::string_view n) const { return cur().type == TokType::Name && cur().text == n; }
  bool is_op(OpKind op) const { return cur().type == TokType::Op && cur().op == op; }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  bool skip_op(OpKind op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }

  [[noreturn]] void fail(const std::string& message, const Token& at) const {
    throw SyntaxError(message, at.line, at.col);
  }
  [[noreturn]] void fail(const std::string& message) const { fail(message, cur()); }

  void expect_op(OpKind op, const char* spelling) {
    if (!skip_op(op)) fail(std::string("expected token '") + spelling + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != TokType::Name) fail("expected token 'name', got " + describe(cur()));
    std::string n = cur().text;
    next();
    return n;
  }
  void expect_block_end() {
    if (cur().type != TokType::BlockEnd) fail("expected token 'end of statement block', got " + describe(cur()));
    next();
  }

  ExprPtr make(ExprKind kind, SrcPos pos) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    return e;
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail("template nested too deeply");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  // ---------------------------------------------------------------- statements

  // Parses until a block tag named in `ends` (left as the current token) or the end of input.
  Body subparse(std::initializer_list<std::string_view> ends, std::string_view open_tag) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == TokType::Eof) {
        if (ends.size() == 0) return body;
        std::string want;
        for (auto e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
        fail("Unexpected end of template. Jinja was looking for the following tags: " + want +
             ". The innermost block that needs to be closed is '" + std::string(open_tag) + "'.");
      }
      if (t.type == TokType::Data) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::Data;
        s->pos = pos_of(t);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == TokType::VarBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::Output;
        s->pos = pos_of(t);
        next();
        s->expr = parse_tuple(true, {});
        if (cur().type != TokType::VarEnd) fail("expected token 'end of print statement', got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (t.type == TokType::BlockBegin) {
        next();
        if (cur().type == TokType::Name &&
            std::find(ends.begin(), ends.end(), std::string_view(cur().text)) != ends.end()) {
          return body;
        }
        body.push_back(parse_statement());
        expect_block_end();
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  // After the opening tag's arguments: consumes its block end and parses the body.
  Body parse_statements(std::initializer_list<std::string_view> ends, std::string_view open_tag, bool drop_end) {
    skip_op(OpKind::Colon);
    expect_block_end();
    Body body = subparse(ends, open_tag);
    if (drop_end) next();
    return body;
  }

  StmtPtr new_stmt(StmtKind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->pos = pos_of(at);
    return s;
  }

  StmtPtr parse_statement() {
    const Token& t = cur();
    if (t.type != TokType::Name) fail("tag name expected");
    const std::string& tag = t.text;
    if (tag == "if") return parse_if();
    if (tag == "for") return parse_for();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "with") return parse_with();
    if (tag == "print") {
      auto s = new_stmt(StmtKind::Output, t);
      next();
      s->expr = parse_tuple(true, {});
      return s;
    }
    if (tag == "generation") {
      auto s = new_stmt(StmtKind::Scoped, t);
      next();
      const int saved_loops = loop_depth_;
      loop_depth_ = 0;
      s->body = with_soft(false, [&] { return parse_statements({"endgeneration"}, "generation", true); });
      loop_depth_ = saved_loops;
      return s;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail("'" + tag + "' outside loop");
      auto s = new_stmt(tag == "break" ? StmtKind::Break : StmtKind::Continue, t);
      next();
      return s;
    }
    if (tag == "block" || tag == "extends" || tag == "include" || tag == "import" || tag == "from" ||
        tag == "autoescape") {
      fail("the '" + tag + "' tag is not supported in chat templates");
    }
    fail("Encountered unknown tag '" + tag + "'.");
  }

  template <typename F>
  Body with_soft(bool soft, F f) {
    const bool saved = soft_;
    soft_ = soft;
    auto result = f();
    soft_ = saved;
    return result;
  }

  StmtPtr parse_if() {
    auto s = new_stmt(StmtKind::If, cur());
    next();
    const bool saved = soft_;
    soft_ = true;
    while (true) {
      ExprPtr test = parse_tuple(false, {});
      Body body = parse_statements({"elif", "else", "endif"}, "if", false);
      s->branches.emplace_back(std::move(test), std::move(body));
      const std::string which = cur().text;
      next();
      if (which == "elif") continue;
      if (which == "else") s->else_body = parse_statements({"endif"}, "if", true);
      break;
    }
    soft_ = saved;
    return s;
  }

  StmtPtr parse_for() {
    auto s = new_stmt(StmtKind::For, cur());
    next();
    s->target = parse_assign_target(false, "in");
    if (!skip_name("in")) fail("expected token 'in', got " + describe(cur()));
    s->expr = parse_tuple(false, {"recursive"});
    const bool saved = soft_;
    soft_ = false;
    ++loop_depth_;
    if (skip_name("if")) s->loop_filter = parse_expression(true);
    s->recursive = skip_name("recursive");
    s->body = parse_statements({"endfor", "else"}, "for", false);
    const std::string which = cur().text;
    next();
    --loop_depth_;
    if (which == "else") s->else_body = parse_statements({"endfor"}, "for", true);
    soft_ = saved;
    return s;
  }

  StmtPtr parse_set() {
    auto s = new_stmt(StmtKind::Set, cur());
    next();
    s->target = parse_assign_target(true, "");
    if (skip_op(OpKind::Assign)) {
      s->expr = parse_tuple(true, {});
      return s;
    }
    s->kind = StmtKind::SetBlock;
    while (is_op(OpKind::Pipe)) {
      next();
      s->filters.push_back(parse_one_filter(nullptr));
    }
    s->body = with_soft(false, [&] { return parse_statements({"endset"}, "set", true); });
    return s;
  }

  void parse_signature(MacroDef& m) {
    expect_op(OpKind::LParen, "(");
    bool seen_default = false;
    while (!is_op(OpKind::RParen)) {
      if (!m.params.empty()) expect_op(OpKind::Comma, ",");
      if (is_op(OpKind::RParen)) break;
      m.params.push_back(expect_name());
      if (skip_op(OpKind::Assign)) {
        m.defaults.push_back(parse_expression(true));
        seen_default = true;
      } else {
        if (seen_default) fail("non-default argument follows default argument");
        m.defaults.push_back(nullptr);
      }
    }
    expect_op(OpKind::RParen, ")");
  }

  StmtPtr parse_macro() {
    auto s = new_stmt(StmtKind::Macro, cur());
    next();
    s->macro = std::make_shared<MacroDef>();
    s->macro->name = expect_name();
    parse_signature(*s->macro);
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    s->macro->body = with_soft(false, [&] { return parse_statements({"endmacro"}, "macro", true); });
    loop_depth_ = saved_loops;
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = new_stmt(StmtKind::CallBlock, cur());
    next();
    s->macro = std::make_shared<MacroDef>();
    s->macro->name = "caller";
    if (is_op(OpKind::LParen)) parse_signature(*s->macro);
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::Call) fail("expected call", toks_[i_ - 1]);
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    s->macro->body = with_soft(false, [&] { return parse_statements({"endcall"}, "call", true); });
    loop_depth_ = saved_loops;
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = new_stmt(StmtKind::FilterBlock, cur());
    next();
    s->filters.push_back(parse_one_filter(nullptr));
    while (is_op(OpKind::Pipe)) {
      next();
      s->filters.push_back(parse_one_filter(nullptr));
    }
    s->body = with_soft(false, [&] { return parse_statements({"endfilter"}, "filter", true); });
    return s;
  }

  StmtPtr parse_with() {
    auto s = new_stmt(StmtKind::With, cur());
    next();
    while (cur().type != TokType::BlockEnd) {
      if (!s->assigns.empty()) expect_op(OpKind::Comma, ",");
      Target target = parse_assign_target(false, "");
      expect_op(OpKind::Assign, "=");
      s->assigns.emplace_back(std::move(target), parse_expression(true));
    }
    s->body = with_soft(false, [&] { return parse_statements({"endwith"}, "with", true); });
    return s;
  }

  // name | name.attr (set only) | a, b, ...
  Target parse_assign_target(bool with_namespace, std::string_view end_name) {
    Target t;
    t.pos = pos_of(cur());
    if (with_namespace && cur().type == TokType::Name && peek().type == TokType::Op && peek().op == OpKind::Dot) {
      t.kind = Target::Kind::NamespaceAttr;
      t.names.push_back(expect_name());
      next();  // dot
      t.attr = expect_name();
      return t;
    }
    const bool paren = skip_op(OpKind::LParen);
    while (true) {
      if (cur().type != TokType::Name) fail("can't assign to " + describe(cur()));
      const std::string& n = cur().text;
      if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None") {
        fail("can't assign to const");
      }
      t.names.push_back(n);
      next();
      if (!is_op(OpKind::Comma)) break;
      next();
      if ((paren && is_op(OpKind::RParen)) || (!end_name.empty() && is_name(end_name)) || is_op(OpKind::Assign)) break;
    }
    if (paren) expect_op(OpKind::RParen, ")");
    if (t.names.size() > 1 || paren) t.kind = Target::Kind::Tuple;
    return t;
  }

  // ---------------------------------------------------------------- expressions

  bool is_tuple_end(std::initializer_list<std::string_view> extra_end) const {
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

  ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                      bool explicit_parens = false) {
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

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    DepthGuard guard(*this);
    const size_t pending_mark = pending_.size();
    ExprPtr expr1 = parse_or();
    while (is_name("if")) {
      const SrcPos pos = pos_of(cur());
      next();
      const bool saved = soft_;
      soft_ = true;
      pending_.resize(pending_mark);  // the whole inline if is a soft frame in jinja2
      auto e = make(ExprKind::CondExpr, pos);
      e->a = parse_or();
      if (skip_name("else")) e->c = parse_condexpr();
      soft_ = saved;
      e->b = std::move(expr1);
      expr1 = std::move(e);
    }
    return expr1;
  }

  ExprPtr parse_or() {
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

  ExprPtr parse_and() {
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

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      auto e = make(ExprKind::Not, pos_of(cur()));
      next();
      e->a = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
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

  ExprPtr binary(BinOp op, ExprPtr left, ExprPtr right, SrcPos pos) {
    auto e = make(ExprKind::Binary, pos);
    e->binop = op;
    e->a = std::move(left);
    e->b = std::move(right);
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op(OpKind::Add) || is_op(OpKind::Sub)) {
      const BinOp op = cur().op == OpKind::Add ? BinOp::Add : BinOp::Sub;
      const SrcPos pos = pos_of(cur());
      next();
      left = binary(op, std::move(left), parse_concat(), pos);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const SrcPos pos = pos_of(cur());
    ExprPtr first = parse_math2();
    if (!is_op(OpKind::Tilde)) return first;
    auto e = make(ExprKind::Concat, pos);
    e->items.push_back(std::move(first));
    while (skip_op(OpKind::Tilde)) e->items.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
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

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op(OpKind::Pow)) {
      const SrcPos pos = pos_of(cur());
      next();
      left = binary(BinOp::Pow, std::move(left), parse_unary(true), pos);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
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

  ExprPtr parse_primary() {
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

  ExprPtr parse_list() {
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

  ExprPtr parse_dict() {
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

  ExprPtr parse_postfix(ExprPtr node) {
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

  ExprPtr parse_filter_expr(ExprPtr node) {
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

  ExprPtr parse_subscript(ExprPtr node) {
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

  ExprPtr parse_subscribed() {
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

  CallSpec parse_call_args() {
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

  // Where an expression starts (the receiver of a.b.c(...)), for messages about calls.
  static SrcPos leftmost(const Expr& e) {
    const Expr* p = &e;
    while ((p->kind == ExprKind::Getattr || p->kind == ExprKind::Getitem || p->kind == ExprKind::Call) && p->a) {
      p = p->a.get();
    }
    return p->pos;
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(ExprKind::Call, leftmost(*node));
    e->call = parse_call_args();
    e->a = std::move(node);
    return e;
  }

  std::string parse_dotted_name() {
    std::string name = expect_name();
    while (is_op(OpKind::Dot)) {
      next();
      name += "." + expect_name();
    }
    return name;
  }

  void unknown(const char* what, const std::string& name, SrcPos pos) {
    const std::string message = std::string("No ") + what + " named '" + name + "'.";
    if (!soft_) pending_.push_back(Pending{message, pos});
  }

  ExprPtr parse_one_filter(ExprPtr operand) {
    auto e = make(ExprKind::Filter, pos_of(cur()));
    e->name = parse_dotted_name();
    e->filter = find_filter(e->name);
    if (!e->filter) unknown("filter", e->name, e->pos);
    if (is_op(OpKind::LParen)) e->call = parse_call_args();
    e->a = std::move(operand);
    return e;
  }

  ExprPtr parse_test(ExprPtr node) {
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
                t.type == TokType::Float || is_op(OpKind::LParen) || is_op(OpKind::LBracket) ||
                is_op(OpKind::LBrace)) &&
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

  const std::vector<Token>& toks_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  bool soft_ = false;
  std::vector<Pending> pending_;
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace inferdesk::chat
