// Grammar's built-in nodes (see grammar.h).
#include "constrain/grammar.h"

namespace kvscope {

Grammar::Grammar() {
  GrammarNode any;  // kAnyValue
  any.kind = GrammarNodeKind::Any;
  nodes_.push_back(any);
  GrammarNode object;  // kAnyObject
  object.kind = GrammarNodeKind::Object;
  object.free_keys = true;
  nodes_.push_back(object);
  GrammarNode array;  // kAnyArray
  array.kind = GrammarNodeKind::Array;
  array.items = kAnyValue;
  nodes_.push_back(array);
  GrammarNode string;  // kAnyString
  string.kind = GrammarNodeKind::String;
  nodes_.push_back(string);
  GrammarNode number;  // kAnyNumber
  number.kind = GrammarNodeKind::Number;
  nodes_.push_back(number);
  GrammarNode words;  // kTrueFalseNull
  words.kind = GrammarNodeKind::Literal;
  words.literals = {"true", "false", "null"};
  nodes_.push_back(words);
}

int32_t Grammar::add(GrammarNode node) {
  nodes_.push_back(std::move(node));
  return static_cast<int32_t>(nodes_.size()) - 1;
}

}  // namespace kvscope
