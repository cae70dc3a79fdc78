// to_json (builtins.h): Python's json.dumps with transformers' tojson settings.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "tokenizer/jinja/builtins.h"

namespace kvscope::jinja {

namespace {

std::string escape_json(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out += c;  // ensure_ascii=False: UTF-8 passes through
        }
    }
  }
  return out;
}

class JsonWriter {
 public:
  JsonWriter(std::optional<int64_t> indent, bool sort_keys, SourcePos pos)
      : indent_(indent), sort_keys_(sort_keys), pos_(pos) {}

  void write(const Value& v, int level) {
    if (level > 100) throw JinjaError("tojson: value nested too deeply", pos_);
    if (out.size() > (size_t{64} << 20)) throw JinjaError("tojson: output too long", pos_);
    switch (v.kind()) {
      case Value::Kind::kNone: out.append_plain("null"); return;
      case Value::Kind::kBool: out.append_plain(v.as_bool() ? "true" : "false"); return;
      case Value::Kind::kInt: out.append_plain(std::to_string(v.as_int())); return;
      case Value::Kind::kFloat: {
        const double d = v.as_number();
        out.append_plain(std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : format_float(d));
        return;
      }
      case Value::Kind::kString: write_string(v.as_string()); return;
      case Value::Kind::kList: {
        if (v.is_generator()) break;
        const List& items = v.as_list();
        if (items.empty()) {
          out.append_plain("[]");
          return;
        }
        out.append_plain("[");
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out.append_plain(indent_ ? "," : ", ");
          newline(level + 1);
          write(items[i], level + 1);
        }
        newline(level);
        out.append_plain("]");
        return;
      }
      case Value::Kind::kDict: {
        std::vector<const std::pair<std::string, Value>*> entries;
        for (const auto& e : v.as_dict().entries) entries.push_back(&e);
        if (sort_keys_) {
          std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
        }
        if (entries.empty()) {
          out.append_plain("{}");
          return;
        }
        out.append_plain("{");
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i) out.append_plain(indent_ ? "," : ", ");
          newline(level + 1);
          write_string(TaintedString(entries[i]->first));
          out.append_plain(": ");
          write(entries[i]->second, level + 1);
        }
        newline(level);
        out.append_plain("}");
        return;
      }
      case Value::Kind::kUndefined:
      case Value::Kind::kFunction: break;
    }
    throw JinjaError("tojson: object of type " + v.type_name() + " is not JSON serializable", pos_);
  }

  TaintedString out;

 private:
  void write_string(const TaintedString& s) {
    out.append_plain("\"");
    out.append_marked(escape_json(s.text()), s.any_tainted());
    out.append_plain("\"");
  }
  void newline(int level) {
    if (!indent_) return;
    out.append_plain("\n");
    const int64_t width = std::clamp<int64_t>(*indent_, 0, 1024) * level;  // json.dumps would write it all; 1 KiB per level is plenty
    out.append_plain(std::string(static_cast<size_t>(width), ' '));
  }

  std::optional<int64_t> indent_;
  bool sort_keys_;
  SourcePos pos_;
};

}  // namespace

TaintedString to_json(const Value& v, std::optional<int64_t> indent, bool sort_keys, SourcePos pos) {
  JsonWriter w(indent, sort_keys, pos);
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace kvscope::jinja
