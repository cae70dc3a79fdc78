// GrammarMatcher: the byte-level pushdown automaton (see grammar_matcher.h).
// Phases per node kind are listed next to each kind's handler below.
#include "constrain/grammar_matcher.h"

#include <algorithm>
#include <cassert>

namespace kvscope {
namespace {

using Frame = GrammarMatcher::Frame;
using Stack = GrammarMatcher::Stack;

// What one byte does to the top frame, and so to the stack.
enum class Outcome {
  Accept,     // taken; the frame stays on top (or `push` goes on top of it)
  Reject,     // not a byte that can come here
  Close,      // taken, and it closes the frame's value: pop it
  PopRefeed,  // the frame's value ended just before this byte: pop it, then the parent takes the byte
  Refeed,     // `push` goes on top and takes this byte itself (an array's first item)
};

struct ByteStep {
  Outcome outcome = Outcome::Reject;
  int32_t push = -1;  // a child node to push in phase push_phase (-1: none)
  uint8_t push_phase = 0;
};

ByteStep step_of(Outcome o) { return ByteStep{o, -1, 0}; }

// Phases shared by every kind: 0 is "before the value" (whitespace, then its first byte).
constexpr uint8_t kStart = 0;
// Object.
constexpr uint8_t kObjAfterOpen = 1, kObjAfterComma = 2, kObjInKey = 3, kObjAfterKey = 4, kObjInValue = 5,
                  kObjAfterValue = 6;
// Array.
constexpr uint8_t kArrAfterOpen = 1, kArrAfterValue = 2, kArrInItem = 3;
// String.
// In kStrBody, pos counts the UTF-8 continuation bytes still due and index
// holds the lead byte until the first of them (which some leads restrict); in
// kStrHex, pos counts the hex digits, alive holds their value and index is 1
// when they must be a low surrogate (after \uD800-\uDBFF, which must be
// followed by \uDC00-\uDFFF: strict parsers refuse lone surrogates).
constexpr uint8_t kStrBody = 1, kStrEscape = 2, kStrHex = 3, kStrLowBackslash = 4, kStrLowU = 5;
// Number / Integer: "-" "0" | [1-9] digits, ["." digits], [(e|E) [+-] digits].
constexpr uint8_t kNumAfterMinus = 1, kNumAfterZero = 2, kNumInt = 3, kNumAfterDot = 4, kNumFrac = 5, kNumAfterE = 6,
                  kNumAfterESign = 7, kNumExp = 8;
// Literal.
constexpr uint8_t kLitMatching = 1;

bool is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Whitespace in a phase that allows it: bounded.
Outcome whitespace(Frame& f) {
  if (f.ws >= GrammarMatcher::kMaxWhitespace) return Outcome::Reject;
  ++f.ws;
  return Outcome::Accept;
}

void enter(Frame& f, uint8_t phase) {
  f.phase = phase;
  f.ws = 0;
}

bool number_may_end(uint8_t phase) {
  return phase == kNumAfterZero || phase == kNumInt || phase == kNumFrac || phase == kNumExp;
}

// Literal candidates of `f` that end exactly at f.pos.
bool literal_may_end(const GrammarNode& n, const Frame& f) {
  for (size_t i = 0; i < n.literals.size(); ++i) {
    if ((f.alive >> i & 1) && n.literals[i].size() == f.pos) return true;
  }
  return false;
}

Outcome number_byte(Frame& f, uint8_t c, bool integer) {
  const bool digit = is_digit(c);
  switch (f.phase) {
    case kStart:
      if (c == '-') return enter(f, kNumAfterMinus), Outcome::Accept;
      [[fallthrough]];
    case kNumAfterMinus:
      if (c == '0') return enter(f, kNumAfterZero), Outcome::Accept;
      if (digit) return enter(f, kNumInt), f.pos = 1, Outcome::Accept;
      return Outcome::Reject;
    case kNumInt:
      if (digit) {
        if (f.pos >= GrammarMatcher::kMaxDigits) return Outcome::Reject;
        return ++f.pos, Outcome::Accept;
      }
      [[fallthrough]];
    case kNumAfterZero:
      if (!integer && c == '.') return enter(f, kNumAfterDot), f.pos = 0, Outcome::Accept;
      if (!integer && (c == 'e' || c == 'E')) return enter(f, kNumAfterE), Outcome::Accept;
      return digit ? Outcome::Reject : Outcome::PopRefeed;  // "01" is not JSON
    case kNumAfterDot:
      if (digit) return enter(f, kNumFrac), f.pos = 1, Outcome::Accept;
      return Outcome::Reject;
    case kNumFrac:
      if (digit) {
        if (f.pos >= GrammarMatcher::kMaxDigits) return Outcome::Reject;
        return ++f.pos, Outcome::Accept;
      }
      if (c == 'e' || c == 'E') return enter(f, kNumAfterE), Outcome::Accept;
      return Outcome::PopRefeed;
    case kNumAfterE:
      if (c == '+' || c == '-') return enter(f, kNumAfterESign), Outcome::Accept;
      [[fallthrough]];
    case kNumAfterESign:
      if (digit) return enter(f, kNumExp), f.pos = 1, Outcome::Accept;
      return Outcome::Reject;
    case kNumExp:
      if (digit) {
        if (f.pos >= GrammarMatcher::kMaxExponentDigits) return Outcome::Reject;
        return ++f.pos, Outcome::Accept;
      }
      return Outcome::PopRefeed;
    default: return Outcome::Reject;
  }
}

// Whether \u digits `value` (k of 4 given) can still end as a code unit
// that fits: a low surrogate when `low`, else anything but a low surrogate.
bool hex_prefix_possible(uint64_t value, uint16_t k, bool low) {
  const int shift = 4 * (4 - k);
  const uint64_t lo = value << shift, hi = lo + (uint64_t{1} << shift) - 1;
  return low ? hi >= 0xDC00 && lo <= 0xDFFF : lo < 0xDC00 || hi > 0xDFFF;
}

// The bytes the first continuation byte after UTF-8 lead `lead` may take
// (no overlong forms, no surrogates, nothing above U+10FFFF).
bool first_continuation_ok(uint32_t lead, uint8_t c) {
  switch (lead) {
    case 0xE0: return c >= 0xA0 && c <= 0xBF;
    case 0xED: return c >= 0x80 && c <= 0x9F;
    case 0xF0: return c >= 0x90 && c <= 0xBF;
    case 0xF4: return c >= 0x80 && c <= 0x8F;
    default: return c >= 0x80 && c <= 0xBF;
  }
}

Outcome string_byte(Frame& f, uint8_t c) {
  switch (f.phase) {
    case kStart:
      if (c != '"') return Outcome::Reject;
      enter(f, kStrBody);
      f.pos = 0;
      return Outcome::Accept;
    case kStrBody:
      if (f.pos > 0) {  // inside a UTF-8 character: continuation bytes only
        if (!first_continuation_ok(f.index, c)) return Outcome::Reject;
        f.index = 0;
        return --f.pos, Outcome::Accept;
      }
      if (c == '"') return Outcome::Close;
      if (c == '\\') return enter(f, kStrEscape), Outcome::Accept;
      if (c < 0x20) return Outcome::Reject;  // control characters must be escaped
      if (c < 0x80) return Outcome::Accept;
      f.index = c;
      if (c >= 0xC2 && c <= 0xDF) return f.pos = 1, Outcome::Accept;
      if (c >= 0xE0 && c <= 0xEF) return f.pos = 2, Outcome::Accept;
      if (c >= 0xF0 && c <= 0xF4) return f.pos = 3, Outcome::Accept;
      f.index = 0;
      return Outcome::Reject;
    case kStrEscape:
      if (c == 'u') return enter(f, kStrHex), f.pos = 0, f.alive = 0, f.index = 0, Outcome::Accept;
      if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
        return enter(f, kStrBody), Outcome::Accept;
      }
      return Outcome::Reject;
    case kStrHex: {
      if (!is_hex(c)) return Outcome::Reject;
      const uint64_t digit = is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
      const uint64_t value = f.alive << 4 | digit;
      const bool low = f.index == 1;
      if (!hex_prefix_possible(value, static_cast<uint16_t>(f.pos + 1), low)) return Outcome::Reject;
      f.alive = value;
      if (++f.pos < 4) return Outcome::Accept;
      const bool high = !low && value >= 0xD800 && value <= 0xDBFF;
      enter(f, high ? kStrLowBackslash : kStrBody);
      f.pos = 0;
      f.alive = 0;
      f.index = 0;
      return Outcome::Accept;
    }
    case kStrLowBackslash:
      return c == '\\' ? (enter(f, kStrLowU), Outcome::Accept) : Outcome::Reject;
    case kStrLowU:
      if (c != 'u') return Outcome::Reject;
      enter(f, kStrHex);
      f.pos = 0;
      f.alive = 0;
      f.index = 1;
      return Outcome::Accept;
    default: return Outcome::Reject;
  }
}


// Object phases: { [key : value (, key : value)*] }. Keys of a schema object
// are matched against the candidates (the next properties up to and
// including the first required one) in f.alive; f.index is the next property.
ByteStep object_byte(const GrammarNode& n, Frame& f, uint8_t c) {
  const auto num_props = static_cast<uint32_t>(n.properties.size());
  auto may_close = [&] {  // no required property left from f.index on
    if (n.free_keys) return true;
    for (uint32_t j = f.index; j < num_props; ++j) {
      if (n.properties[j].required) return false;
    }
    return true;
  };
  if (f.phase != kStart && f.phase != kObjInKey && is_ws(c)) return step_of(whitespace(f));
  switch (f.phase) {
    case kStart:
      if (c != '{') return step_of(Outcome::Reject);
      enter(f, kObjAfterOpen);
      f.index = 0;
      return step_of(Outcome::Accept);
    case kObjAfterOpen:
    case kObjAfterComma: {
      if (c == '}' && f.phase == kObjAfterOpen) return step_of(may_close() ? Outcome::Close : Outcome::Reject);
      if (c != '"') return step_of(Outcome::Reject);
      if (n.free_keys) {
        enter(f, kObjInKey);
        return ByteStep{Outcome::Accept, Grammar::kAnyString, kStrBody};
      }
      uint64_t alive = 0;
      for (uint32_t j = f.index; j < num_props; ++j) {
        alive |= uint64_t{1} << (j - f.index);
        if (n.properties[j].required) break;
      }
      if (alive == 0) return step_of(Outcome::Reject);
      enter(f, kObjInKey);
      f.alive = alive;
      f.pos = 1;  // past the opening quote
      return step_of(Outcome::Accept);
    }
    case kObjInKey: {
      uint64_t next = 0;
      uint32_t ended = UINT32_MAX;
      for (uint32_t b = 0; b < 64 && (f.alive >> b) != 0; ++b) {
        if (!(f.alive >> b & 1)) continue;
        const std::string& key = n.properties[f.index + b].key_json;
        if (f.pos < key.size() && static_cast<uint8_t>(key[f.pos]) == c) {
          next |= uint64_t{1} << b;
          if (f.pos + size_t{1} == key.size()) ended = f.index + b;
        }
      }
      if (next == 0) return step_of(Outcome::Reject);
      f.alive = next;
      ++f.pos;
      if (ended != UINT32_MAX) {  // a closing quote: exactly one key ends here
        f.index = ended;
        f.alive = 0;
        f.pos = 0;
        enter(f, kObjAfterKey);
      }
      return step_of(Outcome::Accept);
    }
    case kObjAfterKey:
      if (c != ':') return step_of(Outcome::Reject);
      enter(f, kObjInValue);
      return ByteStep{Outcome::Accept, n.free_keys ? Grammar::kAnyValue : n.properties[f.index].value, kStart};
    case kObjAfterValue:
      if (c == ',') {
        if (!n.free_keys && f.index >= num_props) return step_of(Outcome::Reject);
        enter(f, kObjAfterComma);
        return step_of(Outcome::Accept);
      }
      if (c == '}') return step_of(may_close() ? Outcome::Close : Outcome::Reject);
      return step_of(Outcome::Reject);
    default: return step_of(Outcome::Reject);
  }
}

// Array phases: [ [item (, item)*] ]; f.index counts the items so far.
ByteStep array_byte(const GrammarNode& n, Frame& f, uint8_t c) {
  if (f.phase != kStart && is_ws(c)) return step_of(whitespace(f));
  switch (f.phase) {
    case kStart:
      if (c != '[') return step_of(Outcome::Reject);
      enter(f, kArrAfterOpen);
      f.index = 0;
      return step_of(Outcome::Accept);
    case kArrAfterOpen:
      if (c == ']') return step_of(n.min_items > 0 ? Outcome::Reject : Outcome::Close);
      if (n.max_items == 0) return step_of(Outcome::Reject);
      enter(f, kArrInItem);
      return ByteStep{Outcome::Refeed, n.items, kStart};  // the item takes this byte
    case kArrAfterValue:
      if (c == ',') {
        if (n.max_items >= 0 && f.index >= static_cast<uint32_t>(n.max_items)) return step_of(Outcome::Reject);
        enter(f, kArrInItem);
        return ByteStep{Outcome::Accept, n.items, kStart};
      }
      if (c == ']') {
        return step_of(f.index < static_cast<uint32_t>(n.min_items) ? Outcome::Reject : Outcome::Close);
      }
      return step_of(Outcome::Reject);
    default: return step_of(Outcome::Reject);
  }
}

// Literal: the candidates in f.alive that match so far; f.pos bytes matched.
Outcome literal_byte(const GrammarNode& n, Frame& f, uint8_t c) {
  uint64_t next = 0;
  for (size_t i = 0; i < n.literals.size(); ++i) {
    const bool candidate = f.phase == kStart || (f.alive >> i & 1);
    const std::string& lit = n.literals[i];
    if (candidate && f.pos < lit.size() && static_cast<uint8_t>(lit[f.pos]) == c) next |= uint64_t{1} << i;
  }
  if (next != 0) {
    if (f.phase == kStart) enter(f, kLitMatching), f.pos = 0;
    f.alive = next;
    ++f.pos;
    return Outcome::Accept;
  }
  return f.phase == kLitMatching && literal_may_end(n, f) ? Outcome::PopRefeed : Outcome::Reject;
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  Frame root;
  root.node = grammar_->root();
  stacks_.push_back(Stack{root});
}

bool GrammarMatcher::feed(Stack& s, uint8_t byte, std::vector<Stack>& branches) const {
  const Grammar& g = *grammar_;
  // After a frame is done (closed, or ended by a byte that is not its own),
  // its parent moves on.
  auto pop_and_notify = [&] {
    s.pop_back();
    if (s.empty()) return;
    Frame& p = s.back();
    const GrammarNode& pn = g.node(p.node);
    if (pn.kind == GrammarNodeKind::Object) {
      if (p.phase == kObjInKey) {
        enter(p, kObjAfterKey);
      } else {
        assert(p.phase == kObjInValue);
        enter(p, kObjAfterValue);
        if (!pn.free_keys) ++p.index;
      }
    } else {
      assert(pn.kind == GrammarNodeKind::Array && p.phase == kArrInItem);
      enter(p, kArrAfterValue);
      ++p.index;
    }
  };
  while (true) {
    if (s.empty()) return false;  // a closed value takes nothing more
    Frame& f = s.back();
    const GrammarNode& n = g.node(f.node);
    if (f.phase == kStart && is_ws(byte)) return whitespace(f) == Outcome::Accept;
    ByteStep step;
    switch (n.kind) {
      case GrammarNodeKind::Any:  // decided by the first byte
        if (byte == '{') f.node = Grammar::kAnyObject;
        else if (byte == '[') f.node = Grammar::kAnyArray;
        else if (byte == '"') f.node = Grammar::kAnyString;
        else if (byte == '-' || is_digit(byte)) f.node = Grammar::kAnyNumber;
        else if (byte == 't' || byte == 'f' || byte == 'n') f.node = Grammar::kTrueFalseNull;
        else return false;
        continue;
      case GrammarNodeKind::AnyOf:  // this stack takes the first alternative, copies the others
        for (size_t k = 1; k < n.alternatives.size(); ++k) {
          branches.push_back(s);
          branches.back().back().node = n.alternatives[k];
        }
        f.node = n.alternatives.front();
        continue;
      case GrammarNodeKind::Object: step = object_byte(n, f, byte); break;
      case GrammarNodeKind::Array: step = array_byte(n, f, byte); break;
      case GrammarNodeKind::String: step = step_of(string_byte(f, byte)); break;
      case GrammarNodeKind::Number:
      case GrammarNodeKind::Integer: step = step_of(number_byte(f, byte, n.kind == GrammarNodeKind::Integer)); break;
      case GrammarNodeKind::Literal: step = step_of(literal_byte(n, f, byte)); break;
    }
    if (step.push >= 0) {
      if (s.size() >= kMaxDepth) return false;  // bounded nesting (grammar_matcher.h)
      Frame child;
      child.node = step.push;
      child.phase = step.push_phase;
      s.push_back(child);  // `f` is not used after this
    }
    switch (step.outcome) {
      case Outcome::Accept: return true;
      case Outcome::Reject: return false;
      case Outcome::Close: pop_and_notify(); return true;
      case Outcome::PopRefeed: pop_and_notify(); continue;
      case Outcome::Refeed: continue;
    }
  }
}

bool GrammarMatcher::advance_into(uint8_t byte, GrammarMatcher& to) const {
  // In place in `to`'s stacks, whose vectors keep their capacity from call
  // to call: the trie walk calls this once per node it visits, and
  // allocating there would cost more than the matching.
  if (&to != this) {
    to.grammar_ = grammar_;
    to.stacks_.resize(stacks_.size());
    for (size_t i = 0; i < stacks_.size(); ++i) to.stacks_[i] = stacks_[i];
  }
  std::vector<Stack>& out = to.stacks_;
  const size_t num_in = out.size();
  std::vector<Stack> pending;  // anyOf alternatives still to be fed this byte (rare)
  size_t num_kept = 0;
  for (size_t i = 0; i < num_in; ++i) {
    if (!feed(out[i], byte, pending)) continue;
    if (num_kept != i) std::swap(out[num_kept], out[i]);
    ++num_kept;
  }
  // Bounded work per byte whatever the schema: alternatives beyond the
  // budget are dropped (kMaxStacks in grammar_matcher.h).
  size_t budget = 4 * kMaxStacks;
  while (!pending.empty() && budget-- > 0 && num_kept < kMaxStacks) {
    Stack b = std::move(pending.back());
    pending.pop_back();
    if (!feed(b, byte, pending)) continue;
    if (num_kept < out.size()) {
      out[num_kept] = std::move(b);
    } else {
      out.push_back(std::move(b));
    }
    ++num_kept;
  }
  if (num_kept == 0) return false;  // `to` is left unspecified
  out.resize(num_kept);
  // Alternatives that have become the same state are one.
  if (out.size() > 1) {
    size_t num_unique = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (std::find(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(num_unique), out[i]) !=
          out.begin() + static_cast<std::ptrdiff_t>(num_unique)) {
        continue;
      }
      if (num_unique != i) std::swap(out[num_unique], out[i]);
      ++num_unique;
    }
    out.resize(std::min(num_unique, kMaxStacks));
  }
  return true;
}

bool GrammarMatcher::advance(std::string_view bytes) {
  GrammarMatcher next(*this);
  for (char c : bytes) {
    if (!next.advance_into(static_cast<uint8_t>(c), next)) return false;  // *this unchanged
  }
  stacks_.swap(next.stacks_);
  return true;
}

bool GrammarMatcher::is_complete() const {
  const Grammar& g = *grammar_;
  for (const Stack& s : stacks_) {
    if (s.empty()) return true;
    if (s.size() != 1) continue;
    const Frame& f = s.back();
    const GrammarNode& n = g.node(f.node);
    if ((n.kind == GrammarNodeKind::Number || n.kind == GrammarNodeKind::Integer) && number_may_end(f.phase)) return true;
    if (n.kind == GrammarNodeKind::Literal && f.phase == kLitMatching && literal_may_end(n, f)) return true;
  }
  return false;
}

bool GrammarMatcher::is_closed() const {
  return std::all_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

}  // namespace kvscope
