// Filters and tests (builtins.h), as Jinja2 defines them, with transformers'
// tojson.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "tokenizer/jinja/builtins.h"

namespace kvscope::jinja {

namespace {

[[noreturn]] void fail(const std::string& message, SourcePos pos) { throw JinjaError(message, pos); }

constexpr std::array kFilters = {
    "abs", "attr", "capitalize", "count", "d", "default", "dictsort", "e", "escape", "first", "float", "indent",
    "int", "items", "join", "last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr",
    "replace", "reverse", "round", "safe", "select", "selectattr", "sort", "string", "sum", "title", "tojson",
    "trim", "unique", "upper", "wordcount"};
constexpr std::array kTests = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "float", "ge", "gt",
    "in", "integer", "iterable", "le", "lower", "lt", "mapping", "ne", "none", "number", "odd", "sameas",
    "sequence", "string", "true", "undefined", "upper", "==", "!=", "<", ">", "<=", ">="};

std::optional<std::string> string_arg(const CallArgs& args, size_t i, std::string_view name, SourcePos pos) {
  std::optional<Value> v = args.get(i, name);
  if (!v || v->is_none() || v->is_undefined()) return std::nullopt;
  if (!v->is_string()) fail(std::string(name) + " must be a string", pos);
  return v->as_string().text();
}

int64_t int_arg(const CallArgs& args, size_t i, std::string_view name, int64_t def, SourcePos pos) {
  std::optional<Value> v = args.get(i, name);
  if (!v || v->is_none() || v->is_undefined()) return def;
  if (v->kind() != Value::Kind::kInt) fail(std::string(name) + " must be an integer", pos);
  return v->as_int();
}

// Jinja's attribute getter: "a.b" walks dicts, numbers index lists.
Value get_attribute(const Value& v, const std::string& path) {
  Value cur = v;
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t dot = std::min(path.find('.', begin), path.size());
    const std::string part = path.substr(begin, dot - begin);
    if (cur.is_dict()) {
      const Value* next = cur.as_dict().find(part);
      cur = next ? *next : Value(Undefined{part});
    } else if (cur.is_list() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      const size_t i = std::strtoul(part.c_str(), nullptr, 10);
      cur = i < cur.as_list().size() ? cur.as_list()[i] : Value(Undefined{part});
    } else {
      return Undefined{part};
    }
    begin = dot + 1;
  }
  return cur;
}

// select/reject/selectattr/rejectattr: args from `first` are (test name, test args...).
List select_items(const Value& input, const CallArgs& args, size_t first, bool by_attr, bool keep, SourcePos pos) {
  std::string attr;
  if (by_attr) {
    const std::optional<std::string> a = string_arg(args, 0, "attribute", pos);
    if (!a) fail("selectattr/rejectattr need an attribute", pos);
    attr = *a;
  }
  std::optional<std::string> test;
  CallArgs test_args;
  if (first < args.positional.size()) {
    if (!args.positional[first].is_string()) fail("the test name must be a string", pos);
    test = args.positional[first].as_string().text();
    if (!is_known_test(*test)) fail("no test named '" + *test + "'", pos);
    test_args.positional.assign(args.positional.begin() + static_cast<long>(first) + 1, args.positional.end());
  }
  List out;
  if (!input.truthy()) return out;  // Jinja2 yields nothing for a falsy sequence (None included)
  for (const Value& item : iterate(input, pos)) {
    const Value subject = by_attr ? get_attribute(item, attr) : item;
    const bool pass = test ? apply_test(*test, subject, test_args, pos) : subject.truthy();
    if (pass == keep) out.push_back(item);
  }
  return out;
}

Value to_int(const Value& v, const CallArgs& args, SourcePos pos) {
  const Value def = args.get(0, "default").value_or(Value(0));
  if (v.kind() == Value::Kind::kInt) return v;
  if (v.kind() == Value::Kind::kBool) return Value(int64_t{v.as_bool()});
  if (v.kind() == Value::Kind::kFloat) {
    const double d = v.as_number();
    if (!(std::fabs(d) < 9.2e18)) fail("int(): value out of range", pos);
    return Value(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    const std::string t = strip(v.as_string(), std::nullopt, true, true).text();
    int64_t i = 0;
    if (!t.empty() && std::from_chars(t.data(), t.data() + t.size(), i).ptr == t.data() + t.size()) return Value(i);
    char* end = nullptr;
    const double d = std::strtod(t.c_str(), &end);
    if (!t.empty() && end == t.c_str() + t.size() && std::fabs(d) < 9.2e18) return Value(static_cast<int64_t>(d));
  }
  return def;
}

}  // namespace

TaintedString html_escape(const TaintedString& s) {
  TaintedString out = s;
  const std::array<std::pair<std::string, std::string>, 5> kHtml = {
      {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&#34;"}, {"'", "&#39;"}}};
  for (const auto& [from, to] : kHtml) out = replace(out, from, TaintedString(to), -1);
  return out;
}

bool is_known_filter(std::string_view name) { return std::find(kFilters.begin(), kFilters.end(), name) != kFilters.end(); }
bool is_known_test(std::string_view name) { return std::find(kTests.begin(), kTests.end(), name) != kTests.end(); }

std::optional<int64_t> length_of(const Value& v) {
  if (v.is_string()) return static_cast<int64_t>(codepoint_starts(v.as_string().text()).size() - 1);
  if (v.is_list()) return static_cast<int64_t>(v.as_list().size());
  if (v.is_dict()) return static_cast<int64_t>(v.as_dict().entries.size());
  if (v.is_undefined()) return 0;
  return std::nullopt;
}

List iterate(const Value& v, SourcePos pos) {
  if (v.is_list()) return v.as_list();
  if (v.is_undefined()) return {};
  List out;
  if (v.is_dict()) {
    for (const auto& [k, item] : v.as_dict().entries) out.push_back(Value(k));
    return out;
  }
  if (v.is_string()) {
    const std::vector<size_t> starts = codepoint_starts(v.as_string().text());
    for (size_t i = 0; i + 1 < starts.size(); ++i) out.push_back(Value(v.as_string().slice(starts[i], starts[i + 1])));
    return out;
  }
  fail("'" + v.type_name() + "' object is not iterable", pos);
}

Value apply_filter(const std::string& name, const Value& input, const CallArgs& args, SourcePos pos) {
  const auto text = [&] { return input.to_text(); };
  if (name == "safe") return Value::markup(text());
  if (name == "string") return input.is_string() ? input : Value(text());
  if (name == "e" || name == "escape") return input.is_markup() ? input : Value::markup(html_escape(text()));
  if (name == "trim") return Value(strip(text(), string_arg(args, 0, "chars", pos), true, true));
  if (name == "upper") return Value(to_upper(text()));
  if (name == "lower") return Value(to_lower(text()));
  if (name == "capitalize") return Value(capitalize(text()));
  if (name == "title") return Value(title(text(), /*jinja_filter=*/true));
  if (name == "length" || name == "count") {
    if (input.is_generator()) fail("object of type 'generator' has no len()", pos);
    if (std::optional<int64_t> n = length_of(input)) return Value(*n);
    fail("object of type '" + input.type_name() + "' has no len()", pos);
  }
  if (name == "wordcount") return Value(static_cast<int64_t>(split(text(), std::nullopt, -1).size()));
  if (name == "tojson") {
    std::optional<int64_t> indent;
    if (std::optional<Value> v = args.get(0, "indent"); v && v->kind() == Value::Kind::kInt) indent = v->as_int();
    const bool sort_keys = args.get(99, "sort_keys").value_or(Value(false)).truthy();
    return Value(to_json(input, indent, sort_keys, pos));
  }
  if (name == "items") {
    List out;
    if (input.is_dict()) {
      for (const auto& [k, v] : input.as_dict().entries) out.push_back(Value(List{Value(k), v}));
    } else if (!input.is_undefined()) {
      fail("items needs a mapping, not " + input.type_name(), pos);
    }
    return Value(std::move(out));
  }
  if (name == "join") {
    const std::optional<std::string> attr = string_arg(args, 1, "attribute", pos);
    const TaintedString sep = args.get(0, "d") ? args.get(0, "d")->to_text() : TaintedString();
    TaintedString out;
    bool first = true;
    for (const Value& item : iterate(input, pos)) {
      if (!first) out.append(sep);
      first = false;
      out.append((attr ? get_attribute(item, *attr) : item).to_text());
      if (out.size() > (size_t{64} << 20)) fail("join: string too long", pos);
    }
    return Value(std::move(out));
  }
  if (name == "replace") {
    const std::optional<Value> old = args.get(0, "old"), repl = args.get(1, "new");
    if (!old || !repl) fail("replace needs old and new", pos);
    return Value(replace(text(), old->to_text().text(), repl->to_text(), int_arg(args, 2, "count", -1, pos)));
  }
  if (name == "default" || name == "d") {
    const bool boolean = args.get(1, "boolean").value_or(Value(false)).truthy();
    if (input.is_undefined() || (boolean && !input.truthy())) return args.get(0, "default_value").value_or(Value(""));
    return input;
  }
  if ((name == "last" || name == "reverse") && input.is_generator()) fail("'generator' object is not reversible", pos);
  if (name == "first" || name == "last") {
    const List items = iterate(input, pos);
    if (items.empty()) return Undefined{name};
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value(iterate(input, pos));  // a plain list, also from a generator
  if (name == "reverse") {
    if (input.is_string()) {
      List cps = iterate(input, pos);
      TaintedString out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out.append(it->as_string());
      return Value(std::move(out));
    }
    List items = iterate(input, pos);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "int") return to_int(input, args, pos);
  if (name == "float") {
    if (input.is_number()) return Value(input.as_number());
    if (input.is_string()) {
      const std::string t = strip(input.as_string(), std::nullopt, true, true).text();
      char* end = nullptr;
      const double d = std::strtod(t.c_str(), &end);
      if (!t.empty() && end == t.c_str() + t.size()) return Value(d);
    }
    return args.get(0, "default").value_or(Value(0.0));
  }
  if (name == "abs") {
    if (input.kind() == Value::Kind::kInt) return Value(input.as_int() < 0 ? -input.as_int() : input.as_int());
    if (input.is_number()) return Value(std::fabs(input.as_number()));
    fail("abs needs a number", pos);
  }
  if (name == "round") {
    if (!input.is_number()) fail("round needs a number", pos);
    const double scale = std::pow(10.0, static_cast<double>(int_arg(args, 0, "precision", 0, pos)));
    return Value(std::nearbyint(input.as_number() * scale) / scale);
  }
  if (name == "select" || name == "reject") {
    return Value::generator(select_items(input, args, 0, false, name == "select", pos));
  }
  if (name == "selectattr" || name == "rejectattr") {
    return Value::generator(select_items(input, args, 1, true, name == "selectattr", pos));
  }
  if (name == "map") {
    List out;
    if (!input.truthy()) return Value::generator(std::move(out));  // as Jinja2: nothing for a falsy sequence
    const std::optional<std::string> attr = string_arg(args, 99, "attribute", pos);
    if (attr) {
      const std::optional<Value> def = args.get(99, "default");
      for (const Value& item : iterate(input, pos)) {
        Value v = get_attribute(item, *attr);
        out.push_back(v.is_undefined() && def ? *def : v);
      }
      return Value::generator(std::move(out));
    }
    const std::optional<std::string> filter = string_arg(args, 0, "filter", pos);
    if (!filter || !is_known_filter(*filter) || *filter == "map") fail("map needs attribute= or a filter name", pos);
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const Value& item : iterate(input, pos)) out.push_back(apply_filter(*filter, item, rest, pos));
    return Value::generator(std::move(out));
  }
  if (name == "unique" || name == "sort" || name == "dictsort" || name == "min" || name == "max" || name == "sum") {
    List items = input.is_dict() && name == "dictsort" ? apply_filter("items", input, {}, pos).as_list()
                                                       : iterate(input, pos);
    const std::optional<std::string> attr = string_arg(args, 99, "attribute", pos);
    auto key = [&](const Value& v) {
      Value k = attr ? get_attribute(v, *attr) : name == "dictsort" ? v.as_list()[0] : v;
      return k.is_string() ? Value(to_lower(k.as_string())) : k;  // case-insensitive, as Jinja's default
    };
    if (name == "unique") {
      List out;
      for (const Value& v : items) {
        if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return values_equal(key(o), key(v)); })) {
          out.push_back(v);
        }
      }
      return Value(std::move(out));
    }
    if (name == "sum") {
      Value total = args.get(99, "start").value_or(Value(0));
      for (const Value& v : items) {
        const Value x = attr ? get_attribute(v, *attr) : v;
        if (!x.is_number() || !total.is_number()) fail("sum needs numbers", pos);
        total = (x.kind() == Value::Kind::kInt && total.kind() == Value::Kind::kInt)
                    ? Value(x.as_int() + total.as_int()) : Value(x.as_number() + total.as_number());
      }
      return total;
    }
    auto less = [&](const Value& a, const Value& b) {
      const std::optional<bool> lt = values_less(key(a), key(b));
      if (!lt) fail("cannot compare " + a.type_name() + " and " + b.type_name(), pos);
      return *lt;
    };
    if (name == "min" || name == "max") {
      if (items.empty()) return Undefined{name};
      return name == "min" ? *std::min_element(items.begin(), items.end(), less)
                           : *std::max_element(items.begin(), items.end(), less);
    }
    std::stable_sort(items.begin(), items.end(), less);
    if (args.get(0, "reverse").value_or(Value(false)).truthy()) std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "attr") {
    const std::optional<std::string> a = string_arg(args, 0, "name", pos);
    return a ? get_attribute(input, *a) : Value(Undefined{"attr"});
  }
  if (name == "indent") {
    const std::optional<Value> w = args.get(0, "width");
    const int64_t width = w && w->is_string() ? 0 : std::clamp<int64_t>(int_arg(args, 0, "width", 4, pos), 0, 1024);
    const TaintedString pad = w && w->is_string() ? w->as_string() : TaintedString(std::string(static_cast<size_t>(width), ' '));
    const bool indent_first = args.get(1, "first").value_or(Value(false)).truthy();
    const bool blank = args.get(2, "blank").value_or(Value(false)).truthy();
    const std::vector<TaintedString> lines = split(text(), std::string("\n"), -1);
    TaintedString out;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) out.append_plain("\n");
      if ((i > 0 || indent_first) && (blank || !strip(lines[i], std::nullopt, true, true).empty())) out.append(pad);
      out.append(lines[i]);
    }
    return Value(std::move(out));
  }
  fail("no filter named '" + name + "'", pos);
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& args, SourcePos pos) {
  using K = Value::Kind;
  const auto arg = [&]() {
    if (args.positional.empty()) fail("test '" + name + "' needs an argument", pos);
    return args.positional[0];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == K::kInt;
  if (name == "float") return v.kind() == K::kFloat;
  if (name == "boolean") return v.kind() == K::kBool;
  if (name == "true") return v.kind() == K::kBool && v.as_bool();
  if (name == "false") return v.kind() == K::kBool && !v.as_bool();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "callable") return v.kind() == K::kFunction;
  if (name == "escaped") return false;
  if (name == "lower") return v.is_string() && to_lower(v.as_string()).text() == v.as_string().text();
  if (name == "upper") return v.is_string() && to_upper(v.as_string()).text() == v.as_string().text();
  if (name == "odd" || name == "even") {
    if (v.kind() != K::kInt) fail("'" + name + "' needs an integer", pos);
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const Value d = arg();
    if (v.kind() != K::kInt || d.kind() != K::kInt || d.as_int() == 0) fail("divisibleby needs non-zero integers", pos);
    return v.as_int() % d.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return values_equal(v, arg());
  if (name == "ne" || name == "!=") return !values_equal(v, arg());
  if (name == "sameas") return values_equal(v, arg()) && v.kind() == arg().kind();
  if (name == "in") {
    const Value c = arg();
    if (c.is_string()) return v.is_string() && c.as_string().text().find(v.as_string().text()) != std::string::npos;
    if (c.is_dict()) return v.is_string() && c.as_dict().find(v.as_string().text());
    const List items = iterate(c, pos);
    return std::any_of(items.begin(), items.end(), [&](const Value& x) { return values_equal(x, v); });
  }
  const std::optional<bool> lt = values_less(v, arg()), gt = values_less(arg(), v);
  if (!lt || !gt) fail("cannot compare " + v.type_name() + " and " + arg().type_name(), pos);
  if (name == "lt" || name == "<") return *lt;
  if (name == "gt" || name == ">") return *gt;
  if (name == "le" || name == "<=") return !*gt;
  if (name == "ge" || name == ">=") return !*lt;
  fail("no test named '" + name + "'", pos);
}

}  // namespace kvscope::jinja
