#include "tokenizer/jinja/evaluator.h"

#include <climits>
#include <cmath>
#include <cstdint>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"

namespace kvscope::jinja {

namespace {
[[noreturn]] void fail(const std::string& message, SourcePos pos) { throw JinjaError(message, pos); }

std::string describe(const Value& v) {
  return v.is_undefined() ? "'" + v.undefined_name() + "' is undefined" : v.type_name();
}

// Python integers do not overflow; kvscope's are 64-bit, so an operation
// that would leave that range is an error rather than undefined behaviour.
template <typename Op>
Value checked(Op op, int64_t a, int64_t b, SourcePos pos) {
  int64_t result = 0;
  if (op(a, b, &result)) fail("integer overflow", pos);
  return Value(result);
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
}  // namespace

Evaluator::Evaluator(Dict globals, RenderLimits limits) : globals_(std::move(globals)), limits_(limits) {}

TaintedString Evaluator::render(const Body& body) {
  frames_.assign(1, Frame{});
  TaintedString out;
  out_ = &out;
  exec_body(body);
  out_ = nullptr;
  return out;
}

void Evaluator::step(SourcePos pos) {
  if (++steps_ > limits_.max_steps) fail("the template ran too long (more than " + std::to_string(limits_.max_steps) + " steps)", pos);
}

void Evaluator::write(const TaintedString& s, SourcePos pos) {
  if (out_->size() + s.size() > limits_.max_output_bytes) fail("the template wrote too much output", pos);
  out_->append(s);
}

Value Evaluator::lookup(const std::string& name) const {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
    if (auto found = it->find(name); found != it->end()) return found->second;
  }
  if (const Value* v = globals_.find(name)) return *v;
  return Undefined{name};
}

TaintedString Evaluator::capture(const Body& body) {
  TaintedString captured;
  TaintedString* saved = out_;
  out_ = &captured;
  try {
    exec_body(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return captured;
}

Evaluator::Flow Evaluator::exec_body(const Body& body) {
  for (const StmtPtr& s : body) {
    const Flow flow = exec(*s);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec(const Stmt& s) {
  step(s.pos);
  switch (s.kind) {
    case StmtKind::kText: write(TaintedString(s.text), s.pos); break;
    case StmtKind::kOutput: write(eval(*s.expr).to_text(), s.pos); break;
    case StmtKind::kIf:
      for (const auto& [cond, body] : s.branches) {
        if (!cond || eval(*cond).truthy()) return exec_body(body);
      }
      break;
    case StmtKind::kFor: return exec_for(s);
    case StmtKind::kSet: exec_set(s); break;
    case StmtKind::kSetBlock: assign(s.targets[0], Value(capture(s.body))); break;
    case StmtKind::kMacro: assign(s.targets[0], define_macro(s)); break;
    case StmtKind::kCallBlock: {
      const Value caller = Value::function([this, &s](CallArgs&) {
        frames_.emplace_back();
        TaintedString text = capture(s.body);
        frames_.pop_back();
        return Value(std::move(text));
      });
      frames_.emplace_back();
      frames_.back()["caller"] = caller;
      Value result;
      try {
        result = eval_call(*s.expr);
      } catch (...) {
        frames_.pop_back();
        throw;
      }
      frames_.pop_back();
      write(result.to_text(), s.pos);
      break;
    }
    case StmtKind::kFilterBlock: {
      const Value body(capture(s.body));
      write(apply_filter(s.expr->name, body, eval_args(*s.expr, 1), s.expr->pos).to_text(), s.pos);
      break;
    }
    case StmtKind::kBreak: return Flow::kBreak;
    case StmtKind::kContinue: return Flow::kContinue;
  }
  return Flow::kNormal;
}

void Evaluator::exec_set(const Stmt& s) {
  Value v = eval(*s.expr);
  if (!s.attr.empty()) {
    Value target = lookup(s.targets[0]);
    if (!target.is_namespace()) fail("cannot assign attribute '" + s.attr + "' on " + describe(target), s.pos);
    target.as_dict().set(s.attr, std::move(v));
    return;
  }
  if (s.targets.size() == 1) {
    assign(s.targets[0], std::move(v));
    return;
  }
  const List items = iterate(v, s.pos);
  if (items.size() != s.targets.size()) fail("cannot unpack " + std::to_string(items.size()) + " values", s.pos);
  for (size_t i = 0; i < items.size(); ++i) assign(s.targets[i], items[i]);
}

Evaluator::Flow Evaluator::exec_for(const Stmt& s) {
  const Value iterable = eval(*s.expr);
  if (iterable.is_none() || (!iterable.is_undefined() && !iterable.is_list() && !iterable.is_dict() &&
                             !iterable.is_string())) {
    fail("'" + iterable.type_name() + "' object is not iterable", s.expr->pos);
  }
  List items = iterate(iterable, s.pos);
  auto bind = [&](const Value& item) {
    if (s.targets.size() == 1) {
      assign(s.targets[0], item);
      return;
    }
    const List parts = iterate(item, s.pos);
    if (parts.size() != s.targets.size()) fail("cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(s.targets.size()), s.pos);
    for (size_t i = 0; i < parts.size(); ++i) assign(s.targets[i], parts[i]);
  };
  if (s.filter) {
    List kept;
    for (const Value& item : items) {
      step(s.pos);
      frames_.emplace_back();
      bind(item);
      const bool keep = eval(*s.filter).truthy();
      frames_.pop_back();
      if (keep) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    frames_.emplace_back();
    const Flow flow = exec_body(s.else_body);
    frames_.pop_back();
    return flow == Flow::kNormal ? Flow::kNormal : flow;
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    step(s.pos);
    Dict loop;
    loop.set("index", Value(i + 1));
    loop.set("index0", Value(i));
    loop.set("revindex", Value(n - i));
    loop.set("revindex0", Value(n - i - 1));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == n - 1));
    loop.set("length", Value(n));
    loop.set("depth", Value(1));
    loop.set("depth0", Value(0));
    loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value(Undefined{"previtem"}));
    loop.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value(Undefined{"nextitem"}));
    frames_.emplace_back();
    assign("loop", Value(std::move(loop)));
    Flow flow;
    try {
      bind(items[static_cast<size_t>(i)]);
      flow = exec_body(s.body);
    } catch (...) {
      frames_.pop_back();
      throw;
    }
    frames_.pop_back();
    if (flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Value Evaluator::define_macro(const Stmt& s) {
  return Value::function([this, &s](CallArgs& args) { return call_macro(s, args, lookup("caller")); });
}

Value Evaluator::call_macro(const Stmt& macro, const CallArgs& args, const Value& caller) {
  if (++call_depth_ > limits_.max_call_depth) {
    --call_depth_;
    fail("macros nested too deeply", macro.pos);
  }
  // A macro sees the template's globals and its own arguments, not its caller's locals.
  std::vector<Frame> saved(std::make_move_iterator(frames_.begin() + 1), std::make_move_iterator(frames_.end()));
  frames_.resize(1);
  frames_.emplace_back();
  TaintedString text;
  try {
    if (args.positional.size() > macro.params.size()) fail("too many arguments to macro '" + macro.targets[0] + "'", macro.pos);
    for (size_t i = 0; i < macro.params.size(); ++i) {
      const auto& [name, def] = macro.params[i];
      std::optional<Value> v = args.get(i, name);
      assign(name, v ? *v : def ? eval(*def) : Value(Undefined{name}));
    }
    if (!caller.is_undefined()) assign("caller", caller);
    text = capture(macro.body);
  } catch (...) {
    frames_.resize(1);
    for (Frame& f : saved) frames_.push_back(std::move(f));
    --call_depth_;
    throw;
  }
  frames_.resize(1);
  for (Frame& f : saved) frames_.push_back(std::move(f));
  --call_depth_;
  return Value(std::move(text));
}

CallArgs Evaluator::eval_args(const Expr& e, size_t first_positional) {
  CallArgs args;
  for (size_t i = first_positional; i < e.children.size(); ++i) args.positional.push_back(eval(*e.children[i]));
  for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v));
  return args;
}

Value Evaluator::eval_call(const Expr& e) {
  const Expr& callee = *e.children[0];
  CallArgs args = eval_args(e, 1);
  if (callee.kind == ExprKind::kAttr) {
    const Value object = eval(*callee.children[0]);
    if (object.is_undefined()) fail(describe(object), callee.pos);
    if (!object.is_namespace()) {
      if (std::optional<Value> result = call_method(object, callee.name, args, e.pos)) return *result;
    }
  }
  const Value f = eval(callee);
  if (f.kind() != Value::Kind::kFunction) {
    fail(f.is_undefined() ? describe(f) : f.type_name() + " is not callable", e.pos);
  }
  try {
    return f.as_function()(args);
  } catch (const TemplateRaised& raised) {
    if (raised.pos().line > 0) throw;
    throw TemplateRaised(raised.what(), e.pos);
  } catch (const JinjaError&) {
    throw;
  } catch (const std::exception& ex) {
    fail(ex.what(), e.pos);
  }
}

Value Evaluator::eval_item(const Value& object, const Value& key, SourcePos pos) {
  if (object.is_undefined()) fail(describe(object), pos);
  if (object.is_dict()) {
    if (!key.is_string()) return Undefined{"item"};
    const Value* v = object.as_dict().find(key.as_string().text());
    return v ? *v : Value(Undefined{key.as_string().text()});
  }
  // As Jinja2's getitem: a failed lookup (wrong key type, out of range, an
  // object without items) is Undefined, not an error.
  if ((object.is_list() || object.is_string()) && !object.is_generator() && key.kind() == Value::Kind::kInt) {
    int64_t n = *length_of(object), i = key.as_int();
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Undefined{"index"};
    if (object.is_list()) return object.as_list()[static_cast<size_t>(i)];
    const std::vector<size_t> starts = codepoint_starts(object.as_string().text());
    return Value(object.as_string().slice(starts[static_cast<size_t>(i)], starts[static_cast<size_t>(i) + 1]));
  }
  return Undefined{"item"};
}

Value Evaluator::eval_slice(const Expr& e) {
  const Value object = eval(*e.children[0]);
  auto bound = [&](size_t i) -> std::optional<int64_t> {
    if (!e.children[i]) return std::nullopt;
    const Value v = eval(*e.children[i]);
    if (v.is_none()) return std::nullopt;
    if (v.kind() != Value::Kind::kInt) fail("slice indices must be integers", e.pos);
    return v.as_int();
  };
  const std::optional<int64_t> start = bound(1), stop = bound(2), step_opt = bound(3);
  if (!object.is_list() && !object.is_string()) fail("cannot slice " + describe(object), e.pos);
  const int64_t n = *length_of(object);
  const int64_t stride = step_opt.value_or(1);
  if (stride == 0) fail("slice step cannot be zero", e.pos);
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v < 0 ? *v + n : *v;
    if (stride > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t from = clamp(start, stride > 0 ? 0 : n - 1), to = clamp(stop, stride > 0 ? n : -1);
  std::vector<int64_t> picks;
  for (int64_t i = from; stride > 0 ? i < to : i > to;) {
    picks.push_back(i);
    if (__builtin_add_overflow(i, stride, &i)) break;
  }
  if (object.is_list()) {
    List out;
    for (int64_t i : picks) out.push_back(object.as_list()[static_cast<size_t>(i)]);
    return Value(std::move(out));
  }
  const std::vector<size_t> starts = codepoint_starts(object.as_string().text());
  TaintedString out;
  for (int64_t i : picks) out.append_slice(object.as_string(), starts[static_cast<size_t>(i)], starts[static_cast<size_t>(i) + 1]);
  return Value(std::move(out));
}

Value Evaluator::eval(const Expr& e) {
  Value v = eval_unchecked(e);
  // A string may not outgrow the output limit (x = x ~ x doubles in few steps).
  if (v.is_string() && v.as_string().size() > limits_.max_output_bytes) fail("string too long", e.pos);
  return v;
}

Value Evaluator::eval_unchecked(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLiteral: return e.literal;
    case ExprKind::kName: return lookup(e.name);
    case ExprKind::kAttr: {
      const Value object = eval(*e.children[0]);
      if (object.is_undefined()) fail(describe(object), e.pos);
      if (object.is_dict()) {
        const Value* v = object.as_dict().find(e.name);
        return v ? *v : Value(Undefined{e.name});
      }
      return Undefined{e.name};
    }
    case ExprKind::kItem: {
      const Value object = eval(*e.children[0]);
      return eval_item(object, eval(*e.children[1]), e.pos);
    }
    case ExprKind::kSlice: return eval_slice(e);
    case ExprKind::kUnary: {
      const Value v = eval(*e.children[0]);
      if (e.name == "not") return Value(!v.truthy());
      if (v.kind() == Value::Kind::kInt) {
        if (e.name == "-" && v.as_int() == INT64_MIN) fail("integer overflow", e.pos);
        return Value(e.name == "-" ? -v.as_int() : v.as_int());
      }
      if (v.kind() == Value::Kind::kFloat) return Value(e.name == "-" ? -v.as_number() : v.as_number());
      fail("bad operand for unary " + e.name + ": " + describe(v), e.pos);
    }
    case ExprKind::kBinary: return eval_binary(e);
    case ExprKind::kTest: {
      const Value v = eval(*e.children[0]);
      const bool result = apply_test(e.name, v, eval_args(e, 1), e.pos);
      return Value(result != e.negated);
    }
    case ExprKind::kFilter: {
      const Value v = eval(*e.children[0]);
      return apply_filter(e.name, v, eval_args(e, 1), e.pos);
    }
    case ExprKind::kCall: return eval_call(e);
    case ExprKind::kCond:
      if (eval(*e.children[1]).truthy()) return eval(*e.children[0]);
      return e.children[2] ? eval(*e.children[2]) : Value(Undefined{"else"});
    case ExprKind::kList:
    case ExprKind::kTuple: {
      List items;
      for (const ExprPtr& c : e.children) items.push_back(eval(*c));
      return Value(std::move(items));
    }
    case ExprKind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        const Value key = eval(*e.children[i]);
        if (!key.is_string()) fail("dict keys must be strings", e.children[i]->pos);
        d.set(key.as_string().text(), eval(*e.children[i + 1]));
      }
      return Value(std::move(d));
    }
  }
  fail("unknown expression", e.pos);
}

Value Evaluator::eval_binary(const Expr& e) {
  const std::string& op = e.name;
  const Value l = eval(*e.children[0]);
  if (op == "and") return l.truthy() ? eval(*e.children[1]) : l;
  if (op == "or") return l.truthy() ? l : eval(*e.children[1]);
  const Value r = eval(*e.children[1]);
  if (op == "==") return Value(values_equal(l, r));
  if (op == "!=") return Value(!values_equal(l, r));
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    const std::optional<bool> lt = values_less(l, r), gt = values_less(r, l);
    if (!lt || !gt) fail("cannot compare " + describe(l) + " and " + describe(r), e.pos);
    if (op == "<") return Value(*lt);
    if (op == ">") return Value(*gt);
    if (op == "<=") return Value(!*gt);
    return Value(!*lt);
  }
  if (op == "in" || op == "not in") {
    bool found = false;
    if (r.is_string()) {
      if (!l.is_string()) fail("'in <string>' requires a string on the left, not " + describe(l), e.pos);
      found = r.as_string().text().find(l.as_string().text()) != std::string::npos;
    } else if (r.is_list()) {
      for (const Value& item : r.as_list()) found = found || values_equal(item, l);
    } else if (r.is_dict()) {
      found = l.is_string() && r.as_dict().find(l.as_string().text()) != nullptr;
    } else if (!r.is_undefined()) {
      fail("argument of type '" + r.type_name() + "' is not iterable", e.pos);
    }
    return Value(found != (op == "not in"));
  }
  if (op == "~") {
    TaintedString s = l.to_text();
    s.append(r.to_text());
    return Value(std::move(s));
  }
  if (op == "+" && l.is_string() && r.is_string()) {
    if (l.is_markup() || r.is_markup()) {
      // Markup + str escapes the plain side (Jinja2's Markup.__add__/__radd__).
      TaintedString s = l.is_markup() ? l.as_string() : html_escape(l.as_string());
      s.append(r.is_markup() ? r.as_string() : html_escape(r.as_string()));
      return Value::markup(std::move(s));
    }
    TaintedString s = l.as_string();
    s.append(r.as_string());
    return Value(std::move(s));
  }
  if (op == "+" && l.is_list() && r.is_list() && !l.is_generator() && !r.is_generator()) {
    // The copy is work the step budget pays for, an item a step: doubling a
    // list 40 times, or appending to one in a long loop (quadratic), stops
    // at the budget instead of exhausting memory or running for hours. A
    // template appending one item per message of a 1,000-message chat
    // copies 500,000 items.
    const int64_t copied = static_cast<int64_t>(l.as_list().size() + r.as_list().size());
    if (copied > limits_.max_steps - steps_) {
      fail("the template ran too long (more than " + std::to_string(limits_.max_steps) +
               " steps, list items copied included)",
           e.pos);
    }
    steps_ += copied;
    List items = l.as_list();
    items.insert(items.end(), r.as_list().begin(), r.as_list().end());
    return Value(std::move(items));
  }
  if (op == "*" && ((l.is_string() && r.kind() == Value::Kind::kInt) || (r.is_string() && l.kind() == Value::Kind::kInt))) {
    const TaintedString& s = l.is_string() ? l.as_string() : r.as_string();
    const int64_t times = l.is_string() ? r.as_int() : l.as_int();
    if (times > 0 && !s.empty() && static_cast<size_t>(times) > limits_.max_output_bytes / s.size()) {
      fail("string too long", e.pos);
    }
    TaintedString out;
    if (s.empty()) return Value(std::move(out));
    for (int64_t i = 0; i < times; ++i) out.append(s);
    return Value(std::move(out));
  }
  auto number = [&](const Value& v) {
    if (v.kind() == Value::Kind::kBool) return Value(int64_t{v.as_bool()});
    if (!v.is_number()) fail("unsupported operand for " + op + ": " + describe(l) + " and " + describe(r), e.pos);
    return v;
  };
  const Value a = number(l), b = number(r);
  const bool ints = a.kind() == Value::Kind::kInt && b.kind() == Value::Kind::kInt;
  const double x = a.as_number(), y = b.as_number();
  const auto add = [](int64_t p, int64_t q, int64_t* r) { return __builtin_add_overflow(p, q, r); };
  const auto sub = [](int64_t p, int64_t q, int64_t* r) { return __builtin_sub_overflow(p, q, r); };
  const auto mul = [](int64_t p, int64_t q, int64_t* r) { return __builtin_mul_overflow(p, q, r); };
  if (op == "+") return ints ? checked(add, a.as_int(), b.as_int(), e.pos) : Value(x + y);
  if (op == "-") return ints ? checked(sub, a.as_int(), b.as_int(), e.pos) : Value(x - y);
  if (op == "*") return ints ? checked(mul, a.as_int(), b.as_int(), e.pos) : Value(x * y);
  if (y == 0 && (op == "/" || op == "//" || op == "%")) fail("division by zero", e.pos);
  if (ints && a.as_int() == INT64_MIN && b.as_int() == -1 && (op == "//" || op == "%")) fail("integer overflow", e.pos);
  if (op == "/") return Value(x / y);
  if (op == "//") return ints ? Value(floor_div(a.as_int(), b.as_int())) : Value(std::floor(x / y));
  if (op == "%") {
    if (ints) return Value(a.as_int() - floor_div(a.as_int(), b.as_int()) * b.as_int());
    return Value(x - std::floor(x / y) * y);
  }
  if (op == "**") {
    if (ints && b.as_int() >= 0) {
      const double p = std::pow(x, y);
      if (!(std::fabs(p) < 9.2e18)) fail("integer overflow", e.pos);
      return Value(static_cast<int64_t>(p));
    }
    return Value(std::pow(x, y));
  }
  fail("unknown operator " + op, e.pos);
}

}  // namespace kvscope::jinja
