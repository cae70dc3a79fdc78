#include "tokenizer/jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

namespace kvscope::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

std::optional<Value> CallArgs::get(size_t index, std::string_view name) const {
  if (index < positional.size()) return positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return v;
  }
  return std::nullopt;
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return as_bool();
    case Kind::kInt: return as_int() != 0;
    case Kind::kFloat: return as_number() != 0.0;
    case Kind::kString: return !as_string().empty();
    case Kind::kList: return is_generator_ || !as_list().empty();
    case Kind::kDict: return is_namespace_ || !as_dict().entries.empty();
    case Kind::kFunction: return true;
  }
  return false;
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Python's repr: the shortest text that reads back, with ".0" on integers
  // and exponent form from 1e16 on.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, end);
  const double magnitude = std::fabs(d);
  if (magnitude >= 1e16 || (magnitude != 0.0 && magnitude < 1e-4)) {
    auto [end2, ec2] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    s.assign(buf, end2);
    const size_t e = s.find('e');
    const int exponent = std::atoi(s.c_str() + e + 1);
    return fmt::format("{}e{}{:02d}", s.substr(0, e), exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
  }
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {
std::string quote_python(const std::string& s) {
  // Python's repr picks single quotes unless the text has ' and no ".
  const char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == q) {
          out += '\\';
          out += c;
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += q;
  return out;
}
}  // namespace

std::string Value::repr() const {
  if (is_generator_) return "<generator object>";
  switch (kind()) {
    case Kind::kString: return quote_python(as_string().text());
    case Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < as_list().size(); ++i) {
        if (i) out += ", ";
        out += as_list()[i].repr();
      }
      out += "]";
      return out;
    }
    case Kind::kDict: {
      std::string out = is_namespace_ ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, v] : as_dict().entries) {
        if (!first) out += ", ";
        out += quote_python(k);
        out += ": ";
        out += v.repr();
        first = false;
      }
      out += is_namespace_ ? "}>" : "}";
      return out;
    }
    default: return to_text().text();
  }
}

TaintedString Value::to_text() const {
  switch (kind()) {
    case Kind::kUndefined: return {};
    case Kind::kNone: return TaintedString("None");
    case Kind::kBool: return TaintedString(as_bool() ? "True" : "False");
    case Kind::kInt: return TaintedString(std::to_string(as_int()));
    case Kind::kFloat: return TaintedString(format_float(as_number()));
    case Kind::kString: return as_string();
    case Kind::kFunction: return TaintedString("<function>");
    case Kind::kList:
    case Kind::kDict: {
      // A container printed whole: conservatively tainted if any string in it is.
      bool tainted = false;
      std::function<void(const Value&)> scan = [&](const Value& v) {
        if (v.is_string() && v.as_string().any_tainted()) tainted = true;
        if (v.is_list()) for (const Value& e : v.as_list()) scan(e);
        if (v.is_dict()) for (const auto& [k, e] : v.as_dict().entries) scan(e);
      };
      scan(*this);
      TaintedString out;
      out.append_marked(repr(), tainted);
      return out;
    }
  }
  return {};
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "none";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kList: return is_generator_ ? "generator" : "list";
    case Kind::kDict: return is_namespace_ ? "namespace" : "dict";
    case Kind::kFunction: return "function";
  }
  return "?";
}

bool values_equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) return a.as_number() == b.as_number();
  if ((a.kind() == K::kBool && b.is_number()) || (a.is_number() && b.kind() == K::kBool)) {
    const double x = a.kind() == K::kBool ? (a.as_bool() ? 1.0 : 0.0) : a.as_number();
    const double y = b.kind() == K::kBool ? (b.as_bool() ? 1.0 : 0.0) : b.as_number();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone: return true;
    case K::kBool: return a.as_bool() == b.as_bool();
    case K::kString: return a.as_string().text() == b.as_string().text();
    case K::kList: {
      if (a.as_list().size() != b.as_list().size()) return false;
      for (size_t i = 0; i < a.as_list().size(); ++i) {
        if (!values_equal(a.as_list()[i], b.as_list()[i])) return false;
      }
      return true;
    }
    case K::kDict: {
      if (a.as_dict().entries.size() != b.as_dict().entries.size()) return false;
      for (const auto& [k, v] : a.as_dict().entries) {
        const Value* other = b.as_dict().find(k);
        if (!other || !values_equal(v, *other)) return false;
      }
      return true;
    }
    case K::kFunction: return &a.as_function() == &b.as_function();
    default: return false;
  }
}

std::optional<bool> values_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_number() < b.as_number();
  if (a.is_string() && b.is_string()) return a.as_string().text() < b.as_string().text();
  if (a.is_list() && b.is_list()) {
    const List &x = a.as_list(), &y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (values_equal(x[i], y[i])) continue;
      return values_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  return std::nullopt;
}

}  // namespace kvscope::jinja
