// GrammarMatcher: where a byte string stands in a Grammar. A pushdown
// automaton: the state is a stack of frames (one per JSON value being
// written: its node and its phase), and for anyOf a small set of such
// stacks, one per alternative that still fits. advance() takes bytes and
// says whether they can continue a value of the grammar.
//
// Rules every node follows (docs/json-schema.md):
//   - whitespace (space, \n, \r, \t) is allowed where JSON allows it between
//     tokens, at most kMaxWhitespace bytes in a row, so a model cannot loop
//     on spaces; none after the complete top-level value;
//   - numbers have at most kMaxDigits digits in the integer part and in the
//     fraction, and kMaxExponentDigits in the exponent: a bound like the
//     whitespace one, and one that keeps every integer within int64 and
//     every number within double's range, so clients parse them as such;
//   - values nest at most kMaxDepth deep;
//   - strings are checked for escapes and UTF-8, strictly: no overlong or
//     surrogate encodings, \u surrogates only as high-low pairs;
//   - object keys come in schema order: required ones always, optional ones
//     may be skipped; no key twice. Free-key objects (json_object) take any
//     keys, duplicates included.
// A value is complete when the top-level value is closed, or is a number or
// literal that may end here (is_complete()).
//
// TokenTrie::allowed_tokens keeps one matcher per trie depth and advances
// each into the next with advance_into, which reuses their vectors, so a
// walk allocates nothing once warm.
// Tests: tests/engine/constrain/grammar_matcher_test.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "constrain/grammar.h"

namespace kvscope {

class GrammarMatcher {
 public:
  static constexpr int32_t kMaxWhitespace = 16;
  static constexpr int32_t kMaxDigits = 18;
  static constexpr int32_t kMaxExponentDigits = 2;
  // Values nest at most this deep (every copy of the state is O(depth), and
  // json_object would otherwise let a model open brackets forever).
  static constexpr size_t kMaxDepth = 64;
  // anyOf alternatives followed at once; beyond this the later ones are dropped.
  static constexpr size_t kMaxStacks = 64;

  struct Frame {
    int32_t node = 0;
    uint8_t phase = 0;
    uint8_t ws = 0;        // whitespace bytes in a row in this phase
    uint16_t pos = 0;      // literal/key position, digits, \u hex digits, UTF-8 bytes still due
    uint32_t index = 0;    // Object: next property; Array: items so far
    uint64_t alive = 0;    // Literal/key: candidates still matching (bit i: literal i / property index + i)
    bool operator==(const Frame&) const = default;
  };
  using Stack = std::vector<Frame>;  // [depth] bottom = the top-level value

  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  // Feeds bytes; false (and the state unchanged) when they cannot continue
  // any value of the grammar.
  bool advance(std::string_view bytes);
  // One byte from this state into `to` (which may be *this); false when
  // rejected, and `to` is then unspecified (advance() works on a copy).
  bool advance_into(uint8_t byte, GrammarMatcher& to) const;
  // The bytes so far are a whole value of the grammar.
  bool is_complete() const;
  // No byte at all can follow (a closed top-level value).
  bool is_closed() const;

  const std::vector<Stack>& stacks() const { return stacks_; }
  const Grammar& grammar() const { return *grammar_; }

 private:
  // Feeds `byte` to `s` in place; false when it rejects it. anyOf
  // alternatives met on the way are appended to `branches`, each still to be
  // fed the same byte.
  bool feed(Stack& s, uint8_t byte, std::vector<Stack>& branches) const;

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Stack> stacks_;  // [alternatives] an empty stack: the value is closed
};

}  // namespace kvscope
