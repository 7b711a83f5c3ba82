// The recursive-descent parser behind parse_template() (internal to core/chat): statements in
// parser.cpp, expressions in parser_expr.cpp.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/ast.h"
#include "core/chat/lexer.h"

namespace inferdesk::chat {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& toks) : toks_(toks) {}
  Body run();

 private:
  static constexpr int kMaxNesting = 200;  // expression and block nesting; beyond this the stack is at risk

  struct Pending {  // an unknown filter/test outside a soft frame: a syntax error once parsing ends
    std::string message;
    SrcPos pos;
  };

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail("template nested too deeply");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  // ---- token helpers
  const Token& cur() const { return toks_[i_]; }
  const Token& peek(size_t k = 1) const { return toks_[std::min(i_ + k, toks_.size() - 1)]; }
  void next() {
    if (i_ + 1 < toks_.size()) ++i_;
  }
  static SrcPos pos_of(const Token& t) { return SrcPos{t.line, t.col}; }
  bool is_name(std::string_view n) const { return cur().type == TokType::Name && cur().text == n; }
  bool is_op(OpKind op) const { return cur().type == TokType::Op && cur().op == op; }
  bool skip_name(std::string_view n);
  bool skip_op(OpKind op);
  [[noreturn]] void fail(const std::string& message, const Token& at) const;
  [[noreturn]] void fail(const std::string& message) const { fail(message, cur()); }
  void expect_op(OpKind op, const char* spelling);
  std::string expect_name();
  void expect_block_end();
  ExprPtr make(ExprKind kind, SrcPos pos);

  template <typename F>
  Body with_soft(bool soft, F f) {
    const bool saved = soft_;
    soft_ = soft;
    Body result = f();
    soft_ = saved;
    return result;
  }

  // ---- statements (parser.cpp)
  // Parses until a block tag named in `ends` (left as the current token) or the end of input.
  Body subparse(std::initializer_list<std::string_view> ends, std::string_view open_tag);
  // After the opening tag's arguments: consumes its block end and parses the body.
  Body parse_statements(std::initializer_list<std::string_view> ends, std::string_view open_tag, bool drop_end);
  StmtPtr new_stmt(StmtKind kind, const Token& at);
  StmtPtr parse_statement();
  StmtPtr parse_if();
  StmtPtr parse_for();
  StmtPtr parse_set();
  void parse_signature(MacroDef& m);
  StmtPtr parse_macro();
  StmtPtr parse_call_block();
  StmtPtr parse_filter_block();
  StmtPtr parse_with();
  // name | name.attr (set only) | a, b, ...
  Target parse_assign_target(bool with_namespace, std::string_view end_name);

  // ---- expressions (parser_expr.cpp)
  bool is_tuple_end(std::initializer_list<std::string_view> extra_end) const;
  ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                      bool explicit_parens = false);
  ExprPtr parse_expression(bool with_condexpr);
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr binary(BinOp op, ExprPtr left, ExprPtr right, SrcPos pos);
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  CallSpec parse_call_args();
  // Where an expression starts (the receiver of a.b.c(...)), for messages about calls.
  static SrcPos leftmost(const Expr& e);
  ExprPtr parse_call(ExprPtr node);
  std::string parse_dotted_name();
  void unknown(const char* what, const std::string& name, SrcPos pos);
  ExprPtr parse_one_filter(ExprPtr operand);
  ExprPtr parse_test(ExprPtr node);

  const std::vector<Token>& toks_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  bool soft_ = false;  // inside {% if %} / inline if: unknown filters and tests fail only when run
  std::vector<Pending> pending_;
};

}  // namespace inferdesk::chat
