// Parser: tokens -> statement tree. Precedence follows Jinja2's parser
// (lowest first): conditional `a if c else b`, or, and, not, comparisons and
// `in`, + -, ~, * / // %, **, unary - +, then postfix . [] () and | filters,
// `is` tests. Unknown filters and tests are syntax errors, as in Jinja2 (which
// reports them when compiling).
#pragma once

#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace kvscope::jinja {

// Throws JinjaError with the position of the offending token.
Body parse(const std::vector<Token>& tokens);

}  // namespace kvscope::jinja
