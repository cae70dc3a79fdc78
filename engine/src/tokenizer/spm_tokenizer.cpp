#include "tokenizer/spm_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/utf8.h"
#include "tokenizer/space_marker.h"

namespace kvscope {

namespace {
constexpr int32_t kSpaceCodePoint = 0x2581;

}  // namespace

// Symbols are runs of the escaped text kept as a linked list; a merge joins
// a symbol with its right neighbour. The heap holds candidate pairs, best
// score first (ties: leftmost); stale entries are skipped on pop.
struct SpmTokenizer::Scratch {
  struct Symbol {
    uint32_t begin, size;  // bytes of the text; size 0 once merged away
    int prev, next;
  };
  struct Candidate {
    float score;
    int left, right;
    uint32_t size;  // bytes of the joined text, to detect stale entries
    bool operator<(const Candidate& o) const { return score != o.score ? score < o.score : left > o.left; }
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::string escaped;
};

Result<std::unique_ptr<Tokenizer>> SpmTokenizer::create(const VocabData& data) {
  auto vocab = Vocab::build(data);
  if (!vocab) return Error{vocab.error()};
  std::unique_ptr<SpmTokenizer> t(new SpmTokenizer(std::move(*vocab)));
  const Vocab& v = t->vocab_;

  t->bytes_.resize(v.size());
  for (int32_t id = 0; id < v.size(); ++id) {
    const uint16_t attr = v.attr(id);
    const std::string_view text = v.text(id);
    if (attr & (kAttrControl | kAttrUnknown)) continue;
    if (attr & kAttrUserDefined) {
      t->bytes_[id] = std::string(text);  // as llama.cpp: literal text, U+2581 kept
    } else if (attr & kAttrNormal) {
      t->bytes_[id] = unescape_spaces(text);
    } else if ((attr & kAttrByte) && is_byte_token_text(text)) {
      t->bytes_[id] = std::string(1, static_cast<char>(std::stoi(std::string(text.substr(3, 2)), nullptr, 16)));
    }
  }
  for (int b = 0; b < 256; ++b) {
    // llama.cpp's byte_to_token: <0xNN>, else the byte itself as a token.
    auto id = v.find(fmt::format("<0x{:02X}>", b));
    if (!id || v.is_hidden(*id)) id = v.find(std::string(1, static_cast<char>(b)));
    t->byte_ids_[b] = id && !v.is_hidden(*id) ? *id : -1;
  }
  // Characters some token joins to a following U+2581 (Gemma 3's ">▁</"):
  // encode_piece never cuts there.
  for (int32_t id = 0; id < v.size(); ++id) {
    if (v.is_hidden(id)) continue;
    const std::string_view text = v.text(id);
    for (size_t at = text.find(kSpaceMarker, 1); at != std::string_view::npos; at = text.find(kSpaceMarker, at + 1)) {
      size_t begin = at - 1;
      while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
      size_t len = 1;
      const int32_t cp = utf8::decode_one(text, begin, &len);
      if (cp < 0 || begin + len != at) {
        t->cut_before_spaces_ = false;  // malformed token text: do not reason about it
      } else if (cp != kSpaceCodePoint) {
        t->joins_space_.push_back(cp);
      }
    }
  }
  std::sort(t->joins_space_.begin(), t->joins_space_.end());
  t->joins_space_.erase(std::unique(t->joins_space_.begin(), t->joins_space_.end()), t->joins_space_.end());
  const int32_t unk = v.data().unk_id;
  t->unknown_id_ = v.valid(unk) && !v.is_control(unk) ? unk : -1;
  // U+FFFD's ids stand for malformed bytes without a byte token.
  EncodeIssues ignored;
  Scratch scratch;
  t->encode_piece("\xEF\xBF\xBD", scratch, t->replacement_ids_, ignored);
  if (ignored.any()) t->replacement_ids_.clear();
  return std::unique_ptr<Tokenizer>(std::move(t));
}

int32_t SpmTokenizer::mergeable_token(std::string_view text) const {
  const auto id = vocab_.find(text);
  return id && !vocab_.is_hidden(*id) ? *id : -1;
}

std::vector<int32_t> SpmTokenizer::encode_with_plain_ranges(std::string_view text, std::span<const TextRange> plain,
                                                          EncodeIssues* issues) const {
  std::vector<int32_t> out;
  EncodeIssues local;
  Scratch scratch;
  std::string piece;
  bool after_special = true;  // the start of the input counts as "after a special token"
  for (const auto& fragment : vocab_.split_special(text, plain)) {
    if (fragment.id >= 0) {
      out.push_back(fragment.id);
      after_special = true;
      continue;
    }
    piece.clear();
    if (vocab_.data().add_space_prefix && after_special) piece.push_back(' ');
    piece.append(fragment.text);
    after_special = false;
    encode_piece(piece, scratch, out, issues ? *issues : local);
  }
  return out;
}

void SpmTokenizer::encode_piece(std::string_view text, Scratch& scratch, std::vector<int32_t>& out,
                                EncodeIssues& issues) const {
  std::string& s = scratch.escaped;
  s.clear();
  for (char c : text) {
    if (c == ' ') s += kSpaceMarker;
    else s += c;
  }
  // Cut before a U+2581 that no token can join to the character before it:
  // no merge spans the cut, so each side merges alone to the same ids, and
  // the work queue stays small (a whole document is otherwise one queue).
  size_t segment = 0;
  int32_t prev = -1;  // code point before pos, -1 at a segment start or after a malformed byte
  for (size_t pos = 0; pos < s.size();) {
    size_t len = 1;
    const int32_t cp = utf8::decode_one(s, pos, &len);
    if (cp == kSpaceCodePoint && prev >= 0 && prev != kSpaceCodePoint && cut_before_spaces_ &&
        !std::binary_search(joins_space_.begin(), joins_space_.end(), prev)) {
      merge_segment(std::string_view(s).substr(segment, pos - segment), scratch, out, issues);
      segment = pos;
    }
    prev = cp;
    pos += len;
  }
  merge_segment(std::string_view(s).substr(segment), scratch, out, issues);
}

void SpmTokenizer::merge_segment(std::string_view s, Scratch& scratch, std::vector<int32_t>& out,
                                 EncodeIssues& issues) const {
  using Symbol = Scratch::Symbol;
  using Candidate = Scratch::Candidate;
  std::vector<Symbol>& syms = scratch.symbols;
  syms.clear();
  for (size_t pos = 0; pos < s.size();) {
    size_t len = 1;
    utf8::decode_one(s, pos, &len);  // a malformed byte is a symbol of its own
    const int i = static_cast<int>(syms.size());
    syms.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(len), i - 1, i + 1});
    pos += len;
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  std::vector<Candidate>& heap = scratch.heap;  // max-heap by Candidate::operator<
  heap.clear();
  const auto& scores = vocab_.data().scores;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const uint32_t size = syms[left].size + syms[right].size;
    const int32_t id = mergeable_token(std::string_view(s).substr(syms[left].begin, size));
    if (id < 0) return;
    heap.push_back({scores.empty() ? 0.0f : scores[id], left, right, size});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& l = syms[c.left];
    Symbol& r = syms[c.right];
    if (l.size == 0 || r.size == 0 || l.next != c.right || l.size + r.size != c.size) continue;
    l.size += r.size;
    r.size = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    try_add(l.prev, c.left);
    try_add(c.left, l.next);
  }

  for (int i = 0; i >= 0; i = syms[i].next) {
    const std::string_view symbol = std::string_view(s).substr(syms[i].begin, syms[i].size);
    if (const int32_t id = mergeable_token(symbol); id >= 0) {
      out.push_back(id);
    } else {
      append_byte_fallback(symbol, out, issues);
    }
  }
}

void SpmTokenizer::append_byte_fallback(std::string_view symbol, std::vector<int32_t>& out,
                                        EncodeIssues& issues) const {
  // A symbol that is no token is one character (merges only ever form
  // tokens), or one malformed byte.
  size_t len = 1;
  const bool valid = utf8::decode_one(symbol, 0, &len) >= 0 && len == symbol.size();
  if (!valid) ++issues.num_invalid_bytes;
  bool all_bytes = true;
  for (char c : symbol) all_bytes = all_bytes && byte_ids_[static_cast<unsigned char>(c)] >= 0;
  if (all_bytes) {
    for (char c : symbol) out.push_back(byte_ids_[static_cast<unsigned char>(c)]);
    return;
  }
  const auto first = static_cast<unsigned char>(symbol[0]);
  if (valid && unknown_id_ >= 0) {
    out.push_back(unknown_id_);  // SentencePiece without byte fallback: <unk>
    issues.add_replaced(first, /*dropped=*/false);
  } else if (!valid && !replacement_ids_.empty()) {
    out.insert(out.end(), replacement_ids_.begin(), replacement_ids_.end());
    issues.add_replaced(first, /*dropped=*/false);
  } else {
    issues.add_replaced(first, /*dropped=*/true);
  }
}

std::string SpmTokenizer::token_bytes(int32_t id, bool render_special) const {
  if (!vocab_.valid(id)) return {};
  if (vocab_.is_hidden(id)) return render_special ? std::string(vocab_.text(id)) : std::string();
  return bytes_[id];
}

}  // namespace kvscope
