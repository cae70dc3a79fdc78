// Methods of str, dict and list (builtins.h) that chat templates call, as
// Python defines them. Lists have no mutating methods: transformers renders in
// an immutable sandbox, where list.append is an error too.
#include <algorithm>
#include <cstdint>
#include <string>

#include "tokenizer/jinja/builtins.h"

namespace kvscope::jinja {

namespace {

[[noreturn]] void fail(const std::string& message, SourcePos pos) { throw JinjaError(message, pos); }

std::optional<std::string> optional_string(const CallArgs& args, size_t i, std::string_view name, SourcePos pos) {
  std::optional<Value> v = args.get(i, name);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) fail(std::string(name) + " must be a string or None", pos);
  return v->as_string().text();
}

int64_t int_or(const CallArgs& args, size_t i, std::string_view name, int64_t def, SourcePos pos) {
  std::optional<Value> v = args.get(i, name);
  if (!v || v->is_none()) return def;
  if (v->kind() != Value::Kind::kInt) fail(std::string(name) + " must be an integer", pos);
  return v->as_int();
}

// startswith/endswith take a string or a tuple (list) of strings.
bool affix_matches(const std::string& text, const Value& affix, bool prefix, SourcePos pos) {
  if (affix.is_list()) {
    return std::any_of(affix.as_list().begin(), affix.as_list().end(),
                       [&](const Value& a) { return affix_matches(text, a, prefix, pos); });
  }
  if (!affix.is_string()) fail("startswith/endswith need a string or a tuple of strings", pos);
  const std::string& a = affix.as_string().text();
  return prefix ? text.starts_with(a) : text.ends_with(a);
}

// str.format with {} / {0} / {name} fields; format specs and conversions
// are not supported (an error, not a wrong text).
TaintedString format_string(const TaintedString& s, const CallArgs& args, SourcePos pos) {
  const std::string& t = s.text();
  TaintedString out;
  size_t auto_index = 0, literal_begin = 0;
  bool automatic = false, manual = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if ((t[i] == '{' || t[i] == '}') && i + 1 < t.size() && t[i + 1] == t[i]) {
      out.append_slice(s, literal_begin, i + 1);
      literal_begin = ++i + 1;
      continue;
    }
    if (t[i] == '}') fail("single '}' in format string", pos);
    if (t[i] != '{') continue;
    const size_t close = t.find('}', i);
    if (close == std::string::npos) fail("single '{' in format string", pos);
    out.append_slice(s, literal_begin, i);
    const std::string field = t.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos) fail("format specs are not supported: {" + field + "}", pos);
    std::optional<Value> v;
    // Python refuses to mix {} with {0} (named fields mix with either).
    const bool numbered = !field.empty() && field.find_first_not_of("0123456789") == std::string::npos;
    if (field.empty()) automatic = true;
    if (numbered) manual = true;
    if (automatic && manual) fail("cannot switch from manual field specification to automatic field numbering", pos);
    if (field.empty()) {
      v = auto_index < args.positional.size() ? std::optional<Value>(args.positional[auto_index++]) : std::nullopt;
    } else if (std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const size_t n = std::stoul(field);
      if (n < args.positional.size()) v = args.positional[n];
    } else {
      v = args.get(SIZE_MAX, field);
    }
    if (!v) fail("format: no argument for {" + field + "}", pos);
    out.append(v->to_text());
    i = close;
    literal_begin = close + 1;
  }
  out.append_slice(s, literal_begin, t.size());
  return out;
}

std::optional<Value> string_method(const TaintedString& s, const std::string& name, const CallArgs& args,
                                   SourcePos pos) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    return Value(strip(s, optional_string(args, 0, "chars", pos), name != "rstrip", name != "lstrip"));
  }
  if (name == "split") {
    List parts;
    for (TaintedString& p : split(s, optional_string(args, 0, "sep", pos), int_or(args, 1, "maxsplit", -1, pos))) {
      parts.push_back(Value(std::move(p)));
    }
    return Value(std::move(parts));
  }
  if (name == "startswith" || name == "endswith") {
    const std::optional<Value> affix = args.get(0, "prefix");
    if (!affix) fail(name + " needs an argument", pos);
    return Value(affix_matches(s.text(), *affix, name == "startswith", pos));
  }
  if (name == "format") return Value(format_string(s, args, pos));
  if (name == "upper") return Value(to_upper(s));
  if (name == "lower") return Value(to_lower(s));
  if (name == "title") return Value(title(s, /*jinja_filter=*/false));
  if (name == "capitalize") return Value(capitalize(s));
  if (name == "replace") {
    const std::optional<Value> old = args.get(0, "old"), repl = args.get(1, "new");
    if (!old || !repl || !old->is_string() || !repl->is_string()) fail("replace needs two strings", pos);
    return Value(replace(s, old->as_string().text(), repl->as_string(), int_or(args, 2, "count", -1, pos)));
  }
  if (name == "find" || name == "count") {
    const std::optional<std::string> sub = optional_string(args, 0, "sub", pos);
    if (!sub) fail(name + " needs a string", pos);
    if (name == "count") {
      if (sub->empty()) return Value(int64_t(codepoint_starts(s.text()).size()));
      int64_t n = 0;
      for (size_t p = s.text().find(*sub); p != std::string::npos; p = s.text().find(*sub, p + sub->size())) ++n;
      return Value(n);
    }
    const size_t at = s.text().find(*sub);
    if (at == std::string::npos) return Value(int64_t{-1});
    return Value(static_cast<int64_t>(codepoint_starts(s.text().substr(0, at)).size() - 1));
  }
  if (name == "join") {
    const std::optional<Value> items = args.get(0, "iterable");
    if (!items) fail("join needs an iterable", pos);
    TaintedString out;
    bool first = true;
    for (const Value& item : iterate(*items, pos)) {
      if (!item.is_string()) fail("join needs strings, got " + item.type_name(), pos);
      if (!first) out.append(s);
      first = false;
      out.append(item.as_string());
    }
    return Value(std::move(out));
  }
  if (name == "isdigit" || name == "isspace" || name == "isalpha") {
    const std::string& t = s.text();
    auto all = [&](auto pred) { return !t.empty() && std::all_of(t.begin(), t.end(), pred); };
    if (name == "isdigit") return Value(all([](char c) { return c >= '0' && c <= '9'; }));
    if (name == "isspace") return Value(!t.empty() && strip(s, std::nullopt, true, true).empty());
    return Value(all([](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }));
  }
  return std::nullopt;
}

std::optional<Value> dict_method(const Value& d, const std::string& name, const CallArgs& args, SourcePos pos) {
  if (name == "get") {
    const std::optional<Value> key = args.get(0, "key");
    if (!key) fail("get needs a key", pos);
    const Value* v = key->is_string() ? d.as_dict().find(key->as_string().text()) : nullptr;
    return v ? *v : args.get(1, "default").value_or(Value(None{}));
  }
  if (name == "items" || name == "keys" || name == "values") {
    List out;
    for (const auto& [k, v] : d.as_dict().entries) {
      if (name == "items") out.push_back(Value(List{Value(k), v}));
      else if (name == "keys") out.push_back(Value(k));
      else out.push_back(v);
    }
    return Value(std::move(out));
  }
  return std::nullopt;
}

}  // namespace

std::optional<Value> call_method(const Value& obj, const std::string& name, const CallArgs& args, SourcePos pos) {
  if (obj.is_string()) return string_method(obj.as_string(), name, args, pos);
  if (obj.is_dict()) return dict_method(obj, name, args, pos);
  if (obj.is_list() && (name == "index" || name == "count")) {
    const std::optional<Value> x = args.get(0, "value");
    if (!x) fail(name + " needs a value", pos);
    const List& items = obj.as_list();
    if (name == "count") {
      return Value(static_cast<int64_t>(std::count_if(items.begin(), items.end(), [&](const Value& v) { return values_equal(v, *x); })));
    }
    for (size_t i = 0; i < items.size(); ++i) {
      if (values_equal(items[i], *x)) return Value(static_cast<int64_t>(i));
    }
    fail("value is not in list", pos);
  }
  return std::nullopt;
}

}  // namespace kvscope::jinja
