// Lexer: template text -> tokens, applying Jinja's whitespace control the way
// Hugging Face renders chat templates (transformers' apply_chat_template uses
// trim_blocks=True, lstrip_blocks=True and keep_trailing_newline=False):
//   {%- / -%} (and {{- -}}, {#- -#}) strip all whitespace on that side;
//   trim_blocks drops the first newline after a block or comment tag;
//   lstrip_blocks drops spaces and tabs between a line's start and a block or
//   comment tag ({%+ keeps them); one trailing newline of the template goes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/error.h"

namespace kvscope::jinja {

enum class TokenKind { kText, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kString, kInt, kFloat, kOp, kEof };

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string text;  // text, name, operator or the string literal's value (unescaped)
  SourcePos pos;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws JinjaError on an unterminated tag, comment or string.
std::vector<Token> lex(std::string_view source, const LexOptions& options = {});

}  // namespace kvscope::jinja
