// TokenCursor: the parser's position in the token list, its one-token
// look-ahead helpers, and the nesting bound that keeps a hostile template from
// building a tree deep enough to exhaust the stack (parser.cpp).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/lexer.h"

namespace kvscope::jinja {

// Deeper expressions or blocks are refused, not recursed into: every nested
// block, parenthesis and every link of an operator or postfix chain counts,
// so the tree (and evaluating or freeing it) stays this deep at most.
constexpr int kMaxNesting = 512;

class TokenCursor {
 public:
  explicit TokenCursor(const std::vector<Token>& tokens) : t_(tokens) {}

 protected:
  const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  [[noreturn]] void fail(const std::string& message) const { throw JinjaError(message, peek().pos); }
  bool at_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kOp && peek(ahead).text == op;
  }
  bool at_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).text == name;
  }
  bool skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    ++i_;
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!at_name(name)) return false;
    ++i_;
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail("expected '" + std::string(op) + "', got '" + peek().text + "'");
  }
  void expect(TokenKind kind, std::string_view what) {
    if (peek().kind != kind) fail("expected " + std::string(what));
    ++i_;
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::kName) fail("expected a name, got '" + peek().text + "'");
    return next().text;
  }
  std::string peek_block_name() const {
    return peek().kind == TokenKind::kBlockBegin ? peek(1).text : peek().text;
  }

  // Counts the nodes a loop wraps around its left operand (a + b + c ...),
  // which deepen the tree without recursing here.
  struct ChainGuard {
    explicit ChainGuard(TokenCursor& p) : p_(p) {}
    void link() {
      ++links_;
      if (++p_.depth_ > kMaxNesting) p_.fail("expression nested too deeply");
    }
    ~ChainGuard() { p_.depth_ -= links_; }
    TokenCursor& p_;
    int links_ = 0;
  };

  struct DepthGuard {
    explicit DepthGuard(TokenCursor& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail("template nested too deeply");
    }
    ~DepthGuard() { --p_.depth_; }
    TokenCursor& p_;
  };

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace kvscope::jinja
