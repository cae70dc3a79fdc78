// The filters, tests, methods and global functions chat templates use, with
// Jinja2's (and Python's) behaviour. Strings keep their taint
// (tainted_string.h) through every filter and method here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/text_ops.h"
#include "tokenizer/jinja/value.h"

namespace kvscope::jinja {

// Jinja2's escape(): & < > " ' as HTML entities (taint kept, conservatively).
TaintedString html_escape(const TaintedString& s);

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

// Throws JinjaError (at `pos`) on a bad argument.
Value apply_filter(const std::string& name, const Value& input, const CallArgs& args, SourcePos pos);
bool apply_test(const std::string& name, const Value& value, const CallArgs& args, SourcePos pos);
// obj.name(args) for str, dict and list methods; nullopt when `obj` has no such method.
std::optional<Value> call_method(const Value& obj, const std::string& name, const CallArgs& args, SourcePos pos);

// The number of items: codepoints of a string, entries of a list or dict.
std::optional<int64_t> length_of(const Value& v);
// Items of an iterable: a list's elements, a dict's keys, a string's
// codepoints; empty for Undefined. Throws for anything else.
List iterate(const Value& v, SourcePos pos);
// json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys), as
// transformers' |tojson writes it. String values keep their taint (the whole
// quoted text is tainted when any of the string was). Throws for values JSON
// cannot hold (Undefined, functions).
TaintedString to_json(const Value& v, std::optional<int64_t> indent, bool sort_keys, SourcePos pos);

}  // namespace kvscope::jinja
