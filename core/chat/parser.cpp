#include "core/chat/parser.h"

#include "core/chat/parser_impl.h"

namespace inferdesk::chat {

Body parse_template(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

Body Parser::run() {
  Body body = subparse({}, "");
  if (!pending_.empty()) {
    const Pending& p = pending_.front();
    throw SyntaxError(p.message, p.pos.line, p.pos.col);
  }
  return body;
}

// ---------------------------------------------------------------- token helpers

bool Parser::skip_name(std::string_view n) {
  if (!is_name(n)) return false;
  next();
  return true;
}

bool Parser::skip_op(OpKind op) {
  if (!is_op(op)) return false;
  next();
  return true;
}

void Parser::fail(const std::string& message, const Token& at) const { throw SyntaxError(message, at.line, at.col); }

void Parser::expect_op(OpKind op, const char* spelling) {
  if (!skip_op(op)) fail(std::string("expected token '") + spelling + "', got " + describe(cur()));
}

std::string Parser::expect_name() {
  if (cur().type != TokType::Name) fail("expected token 'name', got " + describe(cur()));
  std::string n = cur().text;
  next();
  return n;
}

void Parser::expect_block_end() {
  if (cur().type != TokType::BlockEnd) fail("expected token 'end of statement block', got " + describe(cur()));
  next();
}

ExprPtr Parser::make(ExprKind kind, SrcPos pos) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->pos = pos;
  return e;
}

// ---------------------------------------------------------------- statements

Body Parser::subparse(std::initializer_list<std::string_view> ends, std::string_view open_tag) {
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

Body Parser::parse_statements(std::initializer_list<std::string_view> ends, std::string_view open_tag, bool drop_end) {
  skip_op(OpKind::Colon);
  expect_block_end();
  Body body = subparse(ends, open_tag);
  if (drop_end) next();
  return body;
}

StmtPtr Parser::new_stmt(StmtKind kind, const Token& at) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->pos = pos_of(at);
  return s;
}

StmtPtr Parser::parse_statement() {
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

StmtPtr Parser::parse_if() {
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

StmtPtr Parser::parse_for() {
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

StmtPtr Parser::parse_set() {
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

void Parser::parse_signature(MacroDef& m) {
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

StmtPtr Parser::parse_macro() {
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

StmtPtr Parser::parse_call_block() {
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

StmtPtr Parser::parse_filter_block() {
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

StmtPtr Parser::parse_with() {
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

Target Parser::parse_assign_target(bool with_namespace, std::string_view end_name) {
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

}  // namespace inferdesk::chat
