// Grammar-constrained decoding for JSON output (docs/json-schema.md): a JSON
// schema, or "any JSON object", compiled once into a Grammar that
// SamplingParams::constraint carries. Every sequence of the request then only
// samples tokens whose bytes keep its output a prefix of a value the grammar
// accepts, and end-of-sequence only once that value is complete.
#pragma once

#include <memory>
#include <string_view>

#include "kvscope/result.h"

namespace kvscope {

class Grammar;  // engine/src/constrain/grammar.h: opaque to front ends

// Compiles a JSON schema given as JSON text (its key order is the order the
// object's properties are written in). Supported: type (a name or a list of
// names), properties, required, additionalProperties (false; true only
// without properties), items, minItems, maxItems, enum, const, anyOf, and the
// annotations title, description, default, examples, $schema, $id, $comment.
// Anything else is refused with a message naming the keyword and where it is,
// e.g. "schema at #/properties/age: keyword 'minimum' is not supported".
Result<std::shared_ptr<const Grammar>> compile_json_schema(std::string_view schema_json);

// Any JSON object (OpenAI's response_format {"type": "json_object"}).
std::shared_ptr<const Grammar> json_object_grammar();

}  // namespace kvscope
