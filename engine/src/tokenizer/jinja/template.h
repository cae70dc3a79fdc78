// Template: the Jinja subset chat templates are written in, parsed once and
// rendered as transformers' apply_chat_template renders it (trim_blocks,
// lstrip_blocks, its tojson, raise_exception and strftime_now). The output
// says which bytes came from tainted strings in the context (the messages),
// so the caller can keep control tokens out of them.
//
// Errors - syntax, a template's raise_exception, undefined attributes of
// undefined values, runaway loops or output - are Result errors that name the
// line and column; nothing here throws to the caller or runs unbounded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kvscope/result.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/value.h"

namespace kvscope::jinja {

struct RenderOptions {
  // strftime_now() reads this time (seconds since the epoch, formatted in
  // UTC) when set, else the local clock. Tests pin it.
  std::optional<int64_t> now_unix_seconds;
  RenderLimits limits;
};

class Template {
 public:
  static Result<Template> parse(std::string_view source);
  // `context`: the template's variables. Strings made with
  // TaintedString::from_message print as message text.
  Result<TaintedString> render(const Dict& context, const RenderOptions& options = {}) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}
  std::shared_ptr<const Body> body_;
};

}  // namespace kvscope::jinja
