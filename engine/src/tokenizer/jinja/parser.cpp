#include "tokenizer/jinja/parser.h"

#include <charconv>
#include <cstdlib>
#include <set>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/token_cursor.h"

namespace kvscope::jinja {

namespace {

class Parser : TokenCursor {
 public:
  explicit Parser(const std::vector<Token>& tokens) : TokenCursor(tokens) {}

  Body parse_template() {
    Body body = parse_body({});
    if (peek().kind != TokenKind::kEof) fail("unexpected '" + peek_block_name() + "'");
    // Jinja2 reports an unknown filter or test when compiling, except inside
    // an `if` (or a conditional expression), where it waits until the call
    // runs: templates guard optional filters that way.
    for (const UnknownName& u : unknown_names_) {
      if (!u.conditional) throw JinjaError(u.message, u.pos);
    }
    return body;
  }

 private:
  // ---- statements ----
  // Parses until a {% name %} whose name is in `enders` (left unconsumed) or EOF.
  Body parse_body(const std::set<std::string>& enders) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& tok = peek();
      if (tok.kind == TokenKind::kEof) {
        if (!enders.empty()) {
          // Name the tag that closes the open block ("endif", not "elif").
          std::string closer = *enders.begin();
          for (const std::string& e : enders) {
            if (e.starts_with("end")) closer = e;
          }
          fail("missing {% " + closer + " %}");
        }
        return body;
      }
      if (tok.kind == TokenKind::kText) {
        auto s = make_stmt(StmtKind::kText);
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (tok.kind == TokenKind::kVarBegin) {
        auto s = make_stmt(StmtKind::kOutput);
        ++i_;
        s->expr = parse_tuple_or_expr();
        expect(TokenKind::kVarEnd, "'}}'");
        body.push_back(std::move(s));
      } else if (tok.kind == TokenKind::kBlockBegin) {
        if (peek(1).kind == TokenKind::kName && enders.contains(peek(1).text)) return body;
        body.push_back(parse_block());
      } else {
        fail("unexpected token");
      }
    }
  }

  StmtPtr make_stmt(StmtKind kind) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->pos = peek().pos;
    return s;
  }

  void end_tag() { expect(TokenKind::kBlockEnd, "'%}'"); }
  void expect_end_block(std::string_view name) {
    expect(TokenKind::kBlockBegin, "{% " + std::string(name) + " %}");
    if (!skip_name(name)) fail("expected '" + std::string(name) + "'");
    end_tag();
  }

  StmtPtr parse_block() {
    ++i_;  // {%
    const std::string keyword = expect_name();
    if (keyword == "if") return parse_if();
    if (keyword == "for") return parse_for();
    if (keyword == "set") return parse_set();
    if (keyword == "macro") return parse_macro();
    if (keyword == "call") return parse_call_block();
    if (keyword == "filter") return parse_filter_block();
    if (keyword == "generation") {
      // transformers' {% generation %} marks the assistant's text for
      // training masks; it renders its body unchanged.
      auto s = make_stmt(StmtKind::kIf);
      end_tag();
      s->branches.emplace_back(nullptr, parse_body({"endgeneration"}));
      expect_end_block("endgeneration");
      return s;
    }
    if (keyword == "break" || keyword == "continue") {
      if (loop_depth_ == 0) fail("'" + keyword + "' outside a loop");
      auto s = make_stmt(keyword == "break" ? StmtKind::kBreak : StmtKind::kContinue);
      end_tag();
      return s;
    }
    --i_;
    fail("unknown or unsupported tag '" + keyword + "'");
  }

  StmtPtr parse_if() {
    ++conditional_depth_;
    StmtPtr s = parse_if_branches();
    --conditional_depth_;
    return s;
  }

  StmtPtr parse_if_branches() {
    auto s = make_stmt(StmtKind::kIf);
    ExprPtr cond = parse_expr();
    end_tag();
    while (true) {
      Body body = parse_body({"elif", "else", "endif"});
      s->branches.emplace_back(std::move(cond), std::move(body));
      ++i_;  // {%
      const std::string which = next().text;
      if (which == "endif") break;
      if (which == "elif") {
        cond = parse_expr();
        end_tag();
        continue;
      }
      end_tag();  // else
      s->branches.emplace_back(nullptr, parse_body({"endif"}));
      expect_end_block("endif");
      return s;
    }
    end_tag();
    return s;
  }

  StmtPtr parse_for() {
    auto s = make_stmt(StmtKind::kFor);
    do {
      s->targets.push_back(expect_name());
    } while (skip_op(","));
    if (!skip_name("in")) fail("expected 'in'");
    s->expr = parse_expr(/*allow_conditional=*/false);
    if (skip_name("if")) s->filter = parse_expr(false);
    if (skip_name("recursive")) fail("recursive loops are not supported");
    end_tag();
    ++loop_depth_;
    s->body = unconditional([&] { return parse_body({"else", "endfor"}); });
    --loop_depth_;
    if (at_name("else", 1)) {
      i_ += 2;
      end_tag();
      s->else_body = parse_body({"endfor"});
    }
    expect_end_block("endfor");
    return s;
  }

  StmtPtr parse_set() {
    auto s = make_stmt(StmtKind::kSet);
    do {
      s->targets.push_back(expect_name());
      if (skip_op(".")) s->attr = expect_name();
    } while (skip_op(","));
    if (!s->attr.empty() && s->targets.size() != 1) fail("cannot unpack into an attribute");
    if (peek().kind == TokenKind::kBlockEnd) {
      if (s->targets.size() != 1 || !s->attr.empty()) fail("a {% set %} block takes one name");
      s->kind = StmtKind::kSetBlock;
      end_tag();
      s->body = parse_body({"endset"});
      expect_end_block("endset");
      return s;
    }
    expect_op("=");
    s->expr = parse_tuple_or_expr();
    end_tag();
    return s;
  }

  void parse_params(KeywordArgs& params) {
    expect_op("(");
    while (!skip_op(")")) {
      std::string name = expect_name();
      ExprPtr def;
      if (skip_op("=")) def = parse_expr();
      params.emplace_back(std::move(name), std::move(def));
      if (!at_op(")")) expect_op(",");
    }
  }

  StmtPtr parse_macro() {
    auto s = make_stmt(StmtKind::kMacro);
    s->targets.push_back(expect_name());
    parse_params(s->params);
    end_tag();
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    s->body = unconditional([&] { return parse_body({"endmacro"}); });
    loop_depth_ = saved_loops;
    expect_end_block("endmacro");
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = make_stmt(StmtKind::kCallBlock);
    if (at_op("(")) parse_params(s->params);
    s->expr = parse_expr();
    if (s->expr->kind != ExprKind::kCall) fail("{% call %} needs a call");
    end_tag();
    s->body = parse_body({"endcall"});
    expect_end_block("endcall");
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = make_stmt(StmtKind::kFilterBlock);
    auto f = make(ExprKind::kFilter, peek().pos);
    f->name = expect_name();
    if (!is_known_filter(f->name)) note_unknown("no filter named '" + f->name + "'", f->pos);
    f->children.push_back(make(ExprKind::kLiteral, f->pos));  // stands for the body
    if (skip_op("(")) parse_call_args(*f);
    if (at_op("|")) fail("chained filters in {% filter %} are not supported");
    s->expr = std::move(f);
    end_tag();
    s->body = parse_body({"endfilter"});
    expect_end_block("endfilter");
    return s;
  }

  // ---- expressions ----
  ExprPtr make(ExprKind kind, SourcePos pos) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    return e;
  }
  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r) {
    auto e = make(ExprKind::kBinary, l->pos);
    e->name = std::move(op);
    e->children.push_back(std::move(l));
    e->children.push_back(std::move(r));
    return e;
  }

  // `a, b` at the top of {{ }} or {% set %} is a tuple.
  ExprPtr parse_tuple_or_expr() {
    ExprPtr first = parse_expr();
    if (!at_op(",")) return first;
    auto t = make(ExprKind::kTuple, first->pos);
    t->children.push_back(std::move(first));
    while (skip_op(",")) {
      if (peek().kind == TokenKind::kVarEnd || peek().kind == TokenKind::kBlockEnd) break;
      t->children.push_back(parse_expr());
    }
    return t;
  }

  ExprPtr parse_expr(bool allow_conditional = true) {
    DepthGuard guard(*this);
    const size_t unknown_before = unknown_names_.size();
    ExprPtr e = parse_or();
    ChainGuard chain(*this);
    while (allow_conditional && at_name("if")) {
      chain.link();
      ++i_;
      for (size_t k = unknown_before; k < unknown_names_.size(); ++k) unknown_names_[k].conditional = true;
      ++conditional_depth_;
      auto c = make(ExprKind::kCond, e->pos);
      c->children.push_back(std::move(e));
      c->children.push_back(parse_or());
      c->children.push_back(skip_name("else") ? parse_expr() : nullptr);
      --conditional_depth_;
      e = std::move(c);
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    ChainGuard chain(*this);
    while (skip_name("or")) {
      chain.link();
      e = binary("or", std::move(e), parse_and());
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    ChainGuard chain(*this);
    while (skip_name("and")) {
      chain.link();
      e = binary("and", std::move(e), parse_not());
    }
    return e;
  }
  ExprPtr parse_not() {
    if (at_name("not")) {
      DepthGuard guard(*this);
      auto e = make(ExprKind::kUnary, next().pos);
      e->name = "not";
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    ChainGuard chain(*this);
    while (true) {
      chain.link();
      std::string op;
      if (peek().kind == TokenKind::kOp &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
           peek().text == "<=" || peek().text == ">=")) {
        op = next().text;
      } else if (skip_name("in")) {
        op = "in";
      } else if (at_name("not") && at_name("in", 1)) {
        i_ += 2;
        op = "not in";
      } else {
        return e;
      }
      e = binary(op, std::move(e), parse_math1());
    }
  }
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    ChainGuard chain(*this);
    while (at_op("+") || at_op("-")) {
      chain.link();
      std::string op = next().text;
      e = binary(op, std::move(e), parse_concat());
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    ChainGuard chain(*this);
    while (skip_op("~")) {
      chain.link();
      e = binary("~", std::move(e), parse_math2());
    }
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    ChainGuard chain(*this);
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      chain.link();
      std::string op = next().text;
      e = binary(op, std::move(e), parse_pow());
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary();
    ChainGuard chain(*this);
    while (skip_op("**")) {
      chain.link();
      e = binary("**", std::move(e), parse_unary());
    }
    return e;
  }
  ExprPtr parse_unary() {
    if (at_op("-") || at_op("+")) {
      DepthGuard guard(*this);
      auto e = make(ExprKind::kUnary, peek().pos);
      e->name = next().text;
      e->children.push_back(parse_unary());
      return e;
    }
    return parse_filters(parse_postfix(parse_primary()));
  }

  void parse_call_args(Expr& call) {
    while (!skip_op(")")) {
      if (peek().kind == TokenKind::kName && at_op("=", 1)) {
        std::string key = next().text;
        ++i_;
        call.kwargs.emplace_back(std::move(key), parse_expr());
      } else {
        call.children.push_back(parse_expr());
      }
      if (!at_op(")")) expect_op(",");
    }
  }

  ExprPtr parse_postfix(ExprPtr e) {
    ChainGuard chain(*this);
    while (true) {
      chain.link();
      if (skip_op(".")) {
        auto a = make(ExprKind::kAttr, e->pos);
        if (peek().kind == TokenKind::kInt) {  // x.0 is x[0]
          a->kind = ExprKind::kItem;
          a->children.push_back(std::move(e));
          auto idx = make(ExprKind::kLiteral, peek().pos);
          idx->literal = Value(static_cast<int64_t>(std::atoll(next().text.c_str())));
          a->children.push_back(std::move(idx));
        } else {
          a->name = expect_name();
          a->children.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (skip_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (skip_op("(")) {
        auto c = make(ExprKind::kCall, e->pos);
        c->children.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr object) {
    auto e = make(ExprKind::kItem, object->pos);
    e->children.push_back(std::move(object));
    ExprPtr first = at_op(":") ? nullptr : parse_expr();
    if (!at_op(":")) {
      expect_op("]");
      e->children.push_back(std::move(first));
      return e;
    }
    e->kind = ExprKind::kSlice;
    e->children.push_back(std::move(first));
    for (int part = 0; part < 2; ++part) {
      if (skip_op(":") && !at_op(":") && !at_op("]")) {
        e->children.push_back(parse_expr());
      } else {
        e->children.push_back(nullptr);
      }
    }
    expect_op("]");
    return e;
  }

  ExprPtr parse_filters(ExprPtr e) {
    ChainGuard chain(*this);
    while (true) {
      chain.link();
      if (skip_op("|")) {
        auto f = make(ExprKind::kFilter, peek().pos);
        f->name = expect_name();
        if (!is_known_filter(f->name)) note_unknown("no filter named '" + f->name + "'", f->pos);
        f->children.push_back(std::move(e));
        if (skip_op("(")) parse_call_args(*f);
        e = std::move(f);
      } else if (at_name("is")) {
        ++i_;
        auto t = make(ExprKind::kTest, peek().pos);
        t->negated = skip_name("not");
        t->name = expect_name();
        if (!is_known_test(t->name)) note_unknown("no test named '" + t->name + "'", t->pos);
        t->children.push_back(std::move(e));
        if (skip_op("(")) {
          parse_call_args(*t);
        } else if (peek().kind == TokenKind::kString || peek().kind == TokenKind::kInt ||
                   peek().kind == TokenKind::kFloat) {
          t->children.push_back(parse_primary());
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_primary() {
    const Token& tok = peek();
    auto e = make(ExprKind::kLiteral, tok.pos);
    switch (tok.kind) {
      case TokenKind::kString: {
        std::string s;
        while (peek().kind == TokenKind::kString) s += next().text;  // 'a' 'b' is 'ab'
        e->literal = Value(std::move(s));
        return e;
      }
      case TokenKind::kInt: {
        int64_t v = 0;
        const std::string& text = next().text;
        if (std::from_chars(text.data(), text.data() + text.size(), v).ec != std::errc()) {
          throw JinjaError("integer out of range", tok.pos);
        }
        e->literal = Value(v);
        return e;
      }
      case TokenKind::kFloat:
        e->literal = Value(std::strtod(next().text.c_str(), nullptr));
        return e;
      case TokenKind::kName: {
        const std::string& name = next().text;
        if (name == "true" || name == "True") e->literal = Value(true);
        else if (name == "false" || name == "False") e->literal = Value(false);
        else if (name == "none" || name == "None") e->literal = Value(None{});
        else {
          e->kind = ExprKind::kName;
          e->name = name;
        }
        return e;
      }
      case TokenKind::kOp: break;
      default: fail("expected an expression");
    }
    if (skip_op("(")) {
      if (skip_op(")")) {
        e->kind = ExprKind::kTuple;
        return e;
      }
      ExprPtr inner = parse_expr();
      if (skip_op(")")) return inner;
      e->kind = ExprKind::kTuple;
      e->children.push_back(std::move(inner));
      while (skip_op(",") && !at_op(")")) e->children.push_back(parse_expr());
      expect_op(")");
      return e;
    }
    if (skip_op("[")) {
      e->kind = ExprKind::kList;
      while (!skip_op("]")) {
        e->children.push_back(parse_expr());
        if (!at_op("]")) expect_op(",");
      }
      return e;
    }
    if (skip_op("{")) {
      e->kind = ExprKind::kDict;
      while (!skip_op("}")) {
        e->children.push_back(parse_expr());
        expect_op(":");
        e->children.push_back(parse_expr());
        if (!at_op("}")) expect_op(",");
      }
      return e;
    }
    fail("unexpected '" + tok.text + "'");
  }

  struct UnknownName {
    std::string message;
    SourcePos pos;
    bool conditional;
  };
  void note_unknown(const std::string& message, SourcePos pos) {
    unknown_names_.push_back({message, pos, conditional_depth_ > 0});
  }
  // Runs `parse` outside any conditional (a loop or macro body is a new
  // frame in Jinja2's compiler).
  template <typename F>
  Body unconditional(F parse) {
    const int saved = conditional_depth_;
    conditional_depth_ = 0;
    Body result = parse();
    conditional_depth_ = saved;
    return result;
  }

  std::vector<UnknownName> unknown_names_;
  int conditional_depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace kvscope::jinja
