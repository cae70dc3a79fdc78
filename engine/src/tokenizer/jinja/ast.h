// The syntax tree the parser builds and the evaluator walks.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/value.h"

namespace kvscope::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
using KeywordArgs = std::vector<std::pair<std::string, ExprPtr>>;

enum class ExprKind {
  kLiteral,  // literal
  kName,     // name
  kAttr,     // children[0].name
  kItem,     // children[0][children[1]]
  kSlice,    // children[0][children[1]:children[2]:children[3]] (null parts allowed)
  kUnary,    // name ("not", "-", "+") children[0]
  kBinary,   // children[0] name children[1] (and, or, +, ~, ==, in, not in, ...)
  kTest,     // children[0] is [not] name(children[1..])
  kFilter,   // children[0] | name(children[1..], kwargs)
  kCall,     // children[0](children[1..], kwargs)
  kCond,     // children[0] if children[1] else children[2] (else may be null)
  kList,     // [children...]
  kTuple,    // (children...)
  kDict,     // {children[0]: children[1], ...}
};

struct Expr {
  ExprKind kind;
  SourcePos pos;
  Value literal;
  std::string name;
  std::vector<ExprPtr> children;
  KeywordArgs kwargs;
  bool negated = false;  // "is not"
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  kText,      // text
  kOutput,    // {{ expr }}
  kIf,        // branches (condition null for else)
  kFor,       // {% for targets in expr [if filter] %}body{% else %}else_body
  kSet,       // {% set targets = expr %} or {% set targets[0].attr = expr %}
  kSetBlock,  // {% set targets[0] %}body{% endset %}
  kMacro,     // {% macro targets[0](params) %}body
  kCallBlock, // {% call expr %}body: expr called with caller() = body
  kFilterBlock,  // {% filter expr %}body: expr is a kFilter whose input is the rendered body
  kBreak,
  kContinue,
};

struct Stmt {
  StmtKind kind;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::vector<std::string> targets;
  std::string attr;
  ExprPtr filter;
  Body body;
  Body else_body;
  KeywordArgs params;  // macro parameters, with default or null
};

}  // namespace kvscope::jinja
