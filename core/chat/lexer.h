// Lexer of the chat-template renderer: jinja2's lexer with the options transformers uses
// (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, default delimiters).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace inferdesk::chat {

enum class TokType : uint8_t { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Op, Eof };

enum class OpKind : uint8_t {
  None,
  Add,
  Sub,
  Div,
  FloorDiv,
  Mul,
  Pow,
  Mod,
  Tilde,
  LBracket,
  RBracket,
  LParen,
  RParen,
  LBrace,
  RBrace,
  Eq,
  Ne,
  Gt,
  Ge,
  Lt,
  Le,
  Assign,
  Dot,
  Colon,
  Pipe,
  Comma,
  Semicolon,
};

struct Token {
  TokType type = TokType::Eof;
  OpKind op = OpKind::None;
  std::string text;  // Data text, Name, decoded String value, operator spelling
  int64_t ival = 0;
  double fval = 0;
  uint32_t line = 0;
  uint32_t col = 0;  // 1-based, in code points
};

// A template syntax error at line:column (1-based).
class SyntaxError : public std::runtime_error {
 public:
  SyntaxError(const std::string& message, uint32_t line, uint32_t col)
      : std::runtime_error(message), line_(line), col_(col) {}
  uint32_t line() const { return line_; }
  uint32_t column() const { return col_; }

 private:
  uint32_t line_, col_;
};

// jinja2's source preparation: "\r\n" and "\r" become "\n", and one trailing newline is dropped.
std::string normalize_source(std::string_view source);

// Tokenises normalised source. Data tokens already have trim_blocks / lstrip_blocks / "-" applied.
std::vector<Token> lex(std::string_view source);

// "end of print statement", "'foo'", ... for messages.
std::string describe(const Token& t);

}  // namespace inferdesk::chat
