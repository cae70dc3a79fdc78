// Evaluator: runs a parsed template over a context and writes the output,
// with the taint of every string it prints. Bounded: a render that would
// run too many steps, nest macros too deeply or write too much stops with an
// error instead of hanging or exhausting memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace kvscope::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;
  int64_t max_steps = 5'000'000;  // statements, loop iterations and list items copied by +
  int max_call_depth = 64;        // nested macro calls
};

class Evaluator {
 public:
  // `globals`: the context's variables plus functions such as raise_exception.
  Evaluator(Dict globals, RenderLimits limits);
  // Throws JinjaError.
  TaintedString render(const Body& body);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using Frame = std::unordered_map<std::string, Value>;

  Flow exec_body(const Body& body);
  Flow exec(const Stmt& s);
  Flow exec_for(const Stmt& s);
  void exec_set(const Stmt& s);
  Value define_macro(const Stmt& s);
  Value call_macro(const Stmt& macro, const CallArgs& args, const Value& caller);
  TaintedString capture(const Body& body);

  Value eval(const Expr& e);
  Value eval_unchecked(const Expr& e);
  Value eval_binary(const Expr& e);
  Value eval_item(const Value& object, const Value& key, SourcePos pos);
  Value eval_slice(const Expr& e);
  Value eval_call(const Expr& e);
  CallArgs eval_args(const Expr& e, size_t first_positional);

  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v) { frames_.back()[name] = std::move(v); }
  void write(const TaintedString& s, SourcePos pos);
  void step(SourcePos pos);

  Dict globals_;
  RenderLimits limits_;
  std::vector<Frame> frames_;
  TaintedString* out_ = nullptr;
  int64_t steps_ = 0;
  int call_depth_ = 0;
};

}  // namespace kvscope::jinja
