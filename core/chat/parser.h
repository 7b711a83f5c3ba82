// Parser of the chat-template renderer: tokens to a syntax tree, following jinja2's grammar and
// precedence (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary < filters/tests
// < postfix). Unknown filters and tests fail at parse time, except inside {% if %} branches and
// inline ifs, where jinja2 defers the failure until the filter runs.
#pragma once

#include <vector>

#include "core/chat/ast.h"
#include "core/chat/lexer.h"

namespace inferdesk::chat {

// Throws SyntaxError (line:column) on malformed templates.
Body parse_template(const std::vector<Token>& tokens);

}  // namespace inferdesk::chat
