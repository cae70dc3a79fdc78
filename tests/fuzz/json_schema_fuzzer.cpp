// libFuzzer target for JSON-schema constrained decoding (constrain/): a
// server request's response_format schema is untrusted input. Any text must
// compile into a grammar or an error with a message (the server's 400);
// never a crash, a hang, an exception or runaway memory. A compiled grammar's
// matcher is then walked over the input itself and a few JSON values byte by
// byte: whatever it accepts or refuses, it must not crash, and a refused byte
// leaves its state as it was (GrammarMatcher::advance's contract).
// Run: scripts/run_fuzz.sh [seconds]  (seeds: schemas; dictionary: json_schema.dict)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "constrain/grammar_matcher.h"
#include "kvscope/json_constraint.h"

namespace {

void walk(const std::shared_ptr<const kvscope::Grammar>& grammar, std::string_view text) {
  kvscope::GrammarMatcher matcher(grammar);
  for (const char c : text) {
    const auto before = matcher.stacks();
    if (!matcher.advance(std::string_view(&c, 1))) {
      if (matcher.stacks() != before) __builtin_trap();  // refused: unchanged
      return;
    }
    if (matcher.is_closed() && !matcher.is_complete()) __builtin_trap();  // closed means a whole value
  }
  (void)matcher.is_complete();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto grammar = kvscope::compile_json_schema(text);
  if (!grammar.ok()) {
    if (grammar.error().empty()) __builtin_trap();
    walk(kvscope::json_object_grammar(), text);  // "any JSON object" over arbitrary bytes
    return 0;
  }
  walk(*grammar, text);
  for (std::string_view sample : {"{}", "[]", "\"a\"", "-12.5e3", "null", "true", "{\"a\": [1, {\"b\": null}]}",
                                  "{\"name\": \"x\", \"age\": 3}", "[\"\\u00e9\", 0]"}) {
    walk(*grammar, sample);
  }
  return 0;
}
