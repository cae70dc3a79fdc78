#include "tokenizer/jinja/template.h"

#include <ctime>
#include <fmt/format.h>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/parser.h"

namespace kvscope::jinja {

namespace {

std::string where(const JinjaError& e) {
  return fmt::format("line {}, column {}: {}", e.pos().line, e.pos().column, e.what());
}

// range(stop) / range(start, stop[, step]).
Value range(CallArgs& args) {
  std::vector<int64_t> a;
  for (const Value& v : args.positional) {
    if (v.kind() != Value::Kind::kInt) throw std::runtime_error("range() needs integers");
    a.push_back(v.as_int());
  }
  if (a.empty() || a.size() > 3) throw std::runtime_error("range() takes 1 to 3 arguments");
  const int64_t start = a.size() == 1 ? 0 : a[0], stop = a.size() == 1 ? a[0] : a[1], step = a.size() == 3 ? a[2] : 1;
  if (step == 0) throw std::runtime_error("range() step must not be zero");
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    if (out.size() >= 1'000'000) throw std::runtime_error("range() too long");
    out.push_back(Value(i));
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  return Value(std::move(out));
}

Value keyword_dict(CallArgs& args) {
  Dict d;
  if (!args.positional.empty() && args.positional[0].is_dict()) d = args.positional[0].as_dict();
  for (auto& [k, v] : args.keyword) d.set(k, v);
  return Value(std::move(d));
}

Value strftime_now(CallArgs& args, std::optional<int64_t> now) {
  if (args.positional.empty() || !args.positional[0].is_string()) {
    throw std::runtime_error("strftime_now() needs a format string");
  }
  const std::time_t t = now ? static_cast<std::time_t>(*now) : std::time(nullptr);
  std::tm tm{};
  if (now) gmtime_r(&t, &tm);
  else localtime_r(&t, &tm);
  char buf[256];
  const size_t n = std::strftime(buf, sizeof buf, args.positional[0].as_string().text().c_str(), &tm);
  return Value(std::string(buf, n));
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  try {
    auto body = std::make_shared<Body>(jinja::parse(lex(source)));
    return Template(std::move(body));
  } catch (const JinjaError& e) {
    return Error{"chat template syntax error at " + where(e)};
  } catch (const std::exception& e) {
    return Error{std::string("chat template syntax error: ") + e.what()};
  }
}

Result<TaintedString> Template::render(const Dict& context, const RenderOptions& options) const {
  Dict globals;
  globals.set("range", Value::function(range));
  globals.set("dict", Value::function(keyword_dict));
  globals.set("namespace", Value::function([](CallArgs& args) {
    return Value::make_namespace(keyword_dict(args).as_dict());
  }));
  globals.set("raise_exception", Value::function([](CallArgs& args) -> Value {
    const std::string message = args.positional.empty() ? "" : args.positional[0].to_text().text();
    throw TemplateRaised("raise_exception: " + message, SourcePos{0, 0});  // the call site fills in where
  }));
  const std::optional<int64_t> now = options.now_unix_seconds;
  globals.set("strftime_now", Value::function([now](CallArgs& args) { return strftime_now(args, now); }));
  for (const auto& [k, v] : context.entries) globals.set(k, v);
  try {
    Evaluator evaluator(std::move(globals), options.limits);
    return evaluator.render(*body_);
  } catch (const JinjaError& e) {
    return Error{"chat template error at " + where(e)};
  } catch (const std::bad_alloc&) {
    return Error{"chat template error: out of memory"};
  } catch (const std::exception& e) {
    return Error{std::string("chat template error: ") + e.what()};
  }
}

}  // namespace kvscope::jinja
