#include "tokenizer/bpe_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/space_marker.h"
#include "tokenizer/utf8.h"

namespace kvscope {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') out += kSpaceMarker;
    else out += c;
  }
  return out;
}

}  // namespace

// Symbols form a linked list so a merge is O(1); the heap holds candidate
// pairs by (rank, left position) and stale entries are skipped on pop.
struct BpeTokenizer::Scratch {
  struct Symbol {
    int32_t id;            // symbol id, -1 when the text is unknown to tokens and merges
    uint32_t begin, end;   // bytes of the word
    int prev, next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int left, right;
    int32_t left_id, right_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::string mapped;
};

int32_t BpeTokenizer::symbol_id(std::string_view text) const {
  if (auto id = vocab_.find(text)) return *id;
  auto it = extra_symbols_.find(text);
  return it == extra_symbols_.end() ? -1 : it->second;
}

int32_t BpeTokenizer::intern(std::string_view text) {
  if (const int32_t id = symbol_id(text); id >= 0) return id;
  const auto id = static_cast<int32_t>(vocab_.size() + extra_symbols_.size());
  extra_symbols_.emplace(std::string(text), id);
  return id;
}

Result<std::unique_ptr<Tokenizer>> BpeTokenizer::create(const VocabData& data) {
  // llama.cpp names Gemma 4's pre-tokenizer itself; a file without a name
  // gets the default split.
  const std::string pre_name = data.model == "gemma4" ? "gemma4" : data.pre.empty() ? "default" : data.pre;
  auto pre = PreTokenizer::create(pre_name);
  if (!pre) return Error{pre.error()};
  auto vocab = Vocab::build(data);
  if (!vocab) return Error{vocab.error()};
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer(std::move(*vocab), std::move(*pre)));
  t->byte_level_ = t->pre_->rule().byte_level;

  const auto& merges = t->vocab_.data().merges;
  if (merges.empty()) {
    // Either format can bring it: name both keys.
    return Error{"tokenizer: a BPE vocabulary needs merges, and this one has none (GGUF: tokenizer.ggml.merges; "
                 "tokenizer.json: model.merges)"};
  }
  t->merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    // The first space after the first character separates the halves
    // (byte-level text holds no real space; a half may start with one in
    // SentencePiece-style text, hence "after the first character").
    const size_t sep = m.find(' ', 1);
    if (sep == std::string::npos) continue;  // llama.cpp keeps it as a pair that never occurs
    const std::string_view left(m.data(), sep), right(m.data() + sep + 1, m.size() - sep - 1);
    joined.assign(left);
    joined.append(right);
    const int32_t l = t->intern(left), r = t->intern(right), merged = t->intern(joined);
    t->merges_.emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), merged});  // the first rank wins
  }

  for (int b = 0; b < 256; ++b) {
    const std::string byte(1, static_cast<char>(b));
    if (t->byte_level_) {
      const std::string symbol = byte_level::encode(byte);
      t->byte_symbol_[b] = t->symbol_id(symbol);
      const auto id = t->vocab_.find(symbol);
      t->byte_token_[b] = id && !t->vocab_.is_hidden(*id) ? *id : -1;
    } else {
      t->byte_symbol_[b] = -1;
      const auto id = t->vocab_.find(fmt::format("<0x{:02X}>", b));
      t->byte_token_[b] = id && !t->vocab_.is_hidden(*id) ? *id : -1;
    }
  }
  if (t->byte_token_[0xEF] >= 0 && t->byte_token_[0xBF] >= 0 && t->byte_token_[0xBD] >= 0)
    t->replacement_ = kReplacement;

  t->bytes_.resize(t->vocab_.size());
  for (int32_t id = 0; id < t->vocab_.size(); ++id) {
    const uint16_t attr = t->vocab_.attr(id);
    const std::string_view text = t->vocab_.text(id);
    if (attr & (kAttrControl | kAttrUnknown)) continue;
    if (attr & kAttrUserDefined) {
      t->bytes_[id] = std::string(text);  // literal text, matched as written
    } else if (attr & kAttrByte && is_byte_token_text(text)) {
      t->bytes_[id] = std::string(1, static_cast<char>(std::stoi(std::string(text.substr(3, 2)), nullptr, 16)));
    } else if (attr & kAttrNormal) {
      if (!t->byte_level_) {
        t->bytes_[id] = unescape_spaces(text);
      } else {
        auto raw = byte_level::decode(text);
        t->bytes_[id] = raw ? std::move(*raw) : std::string(text);
      }
    }
  }
  return std::unique_ptr<Tokenizer>(std::move(t));
}

std::vector<int32_t> BpeTokenizer::encode_with_plain_ranges(std::string_view text, std::span<const TextRange> plain,
                                                          EncodeIssues* issues) const {
  std::vector<int32_t> out;
  EncodeIssues local;
  std::string storage, escaped;
  Scratch scratch;
  for (const auto& fragment : vocab_.split_special(text, plain)) {
    if (fragment.id >= 0) {
      out.push_back(fragment.id);
      continue;
    }
    std::string_view spelled = spellable(fragment.text, storage, issues ? *issues : local);
    if (pre_->rule().escape_spaces) {
      escaped = escape_spaces(spelled);
      spelled = escaped;
    }
    for (std::string_view word : pre_->split(spelled)) encode_word(word, scratch, out);
  }
  return out;
}

std::string_view BpeTokenizer::spellable(std::string_view text, std::string& storage, EncodeIssues& issues) const {
  size_t copied = 0;  // text[0, copied) is in storage when storage is in use
  bool copying = false;
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 1;
    const bool valid = utf8::decode_one(text, pos, &len) >= 0;
    if (!valid) ++issues.num_invalid_bytes;  // kept as its byte token when there is one (rule 1)
    bool ok = true;
    for (size_t i = pos; i < pos + len; ++i) ok = ok && byte_token_[static_cast<unsigned char>(text[i])] >= 0;
    if (!ok && !byte_level_ && valid) {
      // Raw UTF-8: a character that is a token needs no byte tokens.
      const auto id = vocab_.find(text.substr(pos, len));
      ok = id && !vocab_.is_hidden(*id);
    }
    if (!ok) {
      if (!copying) {
        storage.clear();
        copying = true;
      }
      storage.append(text.substr(copied, pos - copied));
      storage.append(replacement_);
      issues.add_replaced(static_cast<unsigned char>(text[pos]), /*dropped=*/replacement_.empty());
      copied = pos + len;
    }
    pos += len;
  }
  if (!copying) return text;
  storage.append(text.substr(copied));
  return storage;
}

void BpeTokenizer::encode_word(std::string_view word, Scratch& scratch, std::vector<int32_t>& out) const {
  const PreTokenizerRule& rule = pre_->rule();
  if (rule.ignore_merges || (rule.whole_newline_runs && word.find_first_not_of('\n') == std::string_view::npos)) {
    std::string_view mapped = word;
    if (byte_level_) {
      scratch.mapped = byte_level::encode(word);
      mapped = scratch.mapped;
    }
    if (auto id = vocab_.find(mapped); id && !vocab_.is_hidden(*id)) {
      out.push_back(*id);
      return;
    }
  }

  using Symbol = Scratch::Symbol;
  using Candidate = Scratch::Candidate;
  std::vector<Symbol>& syms = scratch.symbols;
  syms.clear();
  for (size_t pos = 0; pos < word.size();) {
    size_t len = 1;
    int32_t id;
    if (byte_level_) {
      id = byte_symbol_[static_cast<unsigned char>(word[pos])];
    } else {
      utf8::decode_one(word, pos, &len);
      id = symbol_id(word.substr(pos, len));
    }
    const int i = static_cast<int>(syms.size());
    syms.push_back({id, static_cast<uint32_t>(pos), static_cast<uint32_t>(pos + len), i - 1, i + 1, true});
    pos += len;
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  std::vector<Candidate>& heap = scratch.heap;  // min-heap: lowest rank, then leftmost
  heap.clear();
  auto try_add = [&](int left) {
    if (left < 0) return;
    const int right = syms[left].next;
    if (right < 0 || syms[left].id < 0 || syms[right].id < 0) return;
    auto it = merges_.find(pair_key(syms[left].id, syms[right].id));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, right, syms[left].id, syms[right].id});
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) try_add(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& l = syms[c.left];
    Symbol& r = syms[c.right];
    if (!l.alive || !r.alive || l.next != c.right || l.id != c.left_id || r.id != c.right_id) continue;
    l.id = merges_.find(pair_key(c.left_id, c.right_id))->second.result;
    l.end = r.end;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    r.alive = false;
    try_add(l.prev);
    try_add(c.left);
  }

  for (int i = 0; i >= 0; i = syms[i].next) {
    const Symbol& s = syms[i];
    if (s.id >= 0 && s.id < vocab_.size() && !vocab_.is_hidden(s.id)) {
      out.push_back(s.id);
    } else {
      // Not a token (a text only merges know, a character the vocabulary
      // lacks, or a control token's text): its bytes' tokens, as llama.cpp.
      append_byte_fallback(word.substr(s.begin, s.end - s.begin), out);
    }
  }
}

void BpeTokenizer::append_byte_fallback(std::string_view raw, std::vector<int32_t>& out) const {
  // spellable() made sure every byte has a token; were one missing it is
  // left out rather than given the unknown token, which in byte-level
  // vocabularies is often a control token.
  for (char c : raw) {
    const int32_t id = byte_token_[static_cast<unsigned char>(c)];
    if (id >= 0) out.push_back(id);
  }
}

std::string BpeTokenizer::token_bytes(int32_t id, bool render_special) const {
  if (!vocab_.valid(id)) return {};
  if (vocab_.is_hidden(id)) return render_special ? std::string(vocab_.text(id)) : std::string();
  return bytes_[id];
}

}  // namespace kvscope
