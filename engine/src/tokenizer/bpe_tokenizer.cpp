#include "tokenizer/bpe_tokenizer.h"

#include <fmt/format.h>

#include <queue>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace kvscope {

Result<std::unique_ptr<Tokenizer>> BpeTokenizer::create(const VocabData& data) {
  auto pre = PreTokenizer::create(data.pre);
  if (!pre) return Error{pre.error()};
  auto vocab = Vocab::build(data);
  if (!vocab) return Error{vocab.error()};
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer(std::move(*vocab), std::move(*pre)));

  const auto& merges = t->vocab_.data().merges;
  if (merges.empty()) return Error{"tokenizer: a gpt2 (BPE) vocabulary needs tokenizer.ggml.merges"};
  t->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    // Byte-level text never holds a real space, so the first space after the
    // first character separates the two halves.
    const size_t sep = m.find(' ', 1);
    if (sep == std::string::npos) return Error{fmt::format("tokenizer: merge {} '{}' has no space", rank, m)};
    const std::string_view left(m.data(), sep), right(m.data() + sep + 1, m.size() - sep - 1);
    auto l = t->vocab_.find(left), r = t->vocab_.find(right);
    auto merged = t->vocab_.find(std::string(left) + std::string(right));
    if (!l || !r || !merged) continue;  // a merge whose halves or result is not a token can never fire
    t->merges_.emplace(pair_key(*l, *r), Merge{static_cast<int32_t>(rank), *merged});
  }

  for (int b = 0; b < 256; ++b) {
    const auto id = t->vocab_.find(byte_level::encode(std::string(1, static_cast<char>(b))));
    t->has_byte_[b] = id && t->vocab_.type(*id) != TokenType::kControl && t->vocab_.type(*id) != TokenType::kUnknown;
  }
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  if (t->has_byte_[0xEF] && t->has_byte_[0xBF] && t->has_byte_[0xBD]) t->replacement_ = kReplacement;

  t->bytes_.resize(t->vocab_.size());
  for (int32_t id = 0; id < t->vocab_.size(); ++id) {
    const TokenType type = t->vocab_.type(id);
    if (type == TokenType::kControl || type == TokenType::kUnknown) continue;
    const std::string_view text = t->vocab_.text(id);
    // Added (user-defined) tokens may be stored as plain text; keep it as is.
    auto raw = byte_level::decode(text);
    t->bytes_[id] = raw ? std::move(*raw) : std::string(text);
  }
  return std::unique_ptr<Tokenizer>(std::move(t));
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool parse_special, EncodeIssues* issues) const {
  std::vector<int32_t> out;
  EncodeIssues local;
  std::string storage;
  for (const auto& fragment : vocab_.split_special(text, parse_special)) {
    if (fragment.id >= 0) {
      out.push_back(fragment.id);
      continue;
    }
    const std::string_view spelled = spellable(fragment.text, storage, issues ? *issues : local);
    for (std::string_view word : pre_->split(spelled)) encode_word(word, out);
  }
  return out;
}

std::string_view BpeTokenizer::spellable(std::string_view text, std::string& storage, EncodeIssues& issues) const {
  size_t copied = 0;  // text[0, copied) is in storage when storage is in use
  bool copying = false;
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 1;
    const bool valid = utf8::decode_one(text, pos, &len) >= 0;
    if (!valid) ++issues.num_invalid_bytes;  // kept as its byte symbol when there is one (rule 1)
    bool ok = true;
    for (size_t i = pos; i < pos + len; ++i) ok = ok && has_byte_[static_cast<unsigned char>(text[i])];
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

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  const std::string mapped = byte_level::encode(word);
  if (pre_->ignore_merges()) {
    if (auto id = vocab_.find(mapped); id && !vocab_.is_control(*id)) {
      out.push_back(*id);
      return;
    }
  }

  // Symbols form a linked list so a merge is O(1); the queue holds candidate
  // pairs by (rank, left position) and stale entries are skipped on pop.
  struct Symbol {
    int32_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> syms;
  syms.reserve(word.size());
  for (size_t pos = 0; pos < mapped.size();) {
    const size_t len = std::max<size_t>(1, utf8::sequence_length(static_cast<unsigned char>(mapped[pos])));
    auto id = vocab_.find(std::string_view(mapped).substr(pos, len));
    const int i = static_cast<int>(syms.size());
    syms.push_back({id ? *id : -1, i - 1, i + 1, true});
    pos += len;
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  struct Candidate {
    int32_t rank;
    int left, right;
    int32_t left_id, right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto try_add = [&](int left) {
    if (left < 0) return;
    const int right = syms[left].next;
    if (right < 0 || syms[left].id < 0 || syms[right].id < 0) return;
    auto it = merges_.find(pair_key(syms[left].id, syms[right].id));
    if (it == merges_.end()) return;
    queue.push({it->second.rank, left, right, syms[left].id, syms[right].id});
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) try_add(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = syms[c.left];
    Symbol& r = syms[c.right];
    if (!l.alive || !r.alive || l.next != c.right || l.id != c.left_id || r.id != c.right_id) continue;
    l.id = merges_.at(pair_key(c.left_id, c.right_id)).result;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    r.alive = false;
    try_add(l.prev);
    try_add(c.left);
  }

  // A symbol without a token (id -1) cannot occur: spellable() checked every
  // byte. Were it to, it is left out rather than given the unknown token,
  // which in byte-level vocabularies is often a control token.
  for (int i = 0; i >= 0; i = syms[i].next) {
    if (syms[i].id >= 0) out.push_back(syms[i].id);
  }
}

std::string BpeTokenizer::token_bytes(int32_t id, bool render_special) const {
  if (!vocab_.valid(id)) return {};
  const TokenType type = vocab_.type(id);
  if (type == TokenType::kControl || type == TokenType::kUnknown)
    return render_special ? std::string(vocab_.text(id)) : std::string();
  return bytes_[id];
}

}  // namespace kvscope
