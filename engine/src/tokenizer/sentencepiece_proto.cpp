#include "tokenizer/sentencepiece_proto.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_set>

namespace kvscope {

namespace {
enum WireType { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };
// ModelProto.SentencePiece.Type
enum PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
constexpr int kModelTypeBpe = 2;

struct Writer {
  std::string out;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out += static_cast<char>((v & 0x7F) | 0x80);
      v >>= 7;
    }
    out += static_cast<char>(v);
  }
  void tag(int field, WireType wt) { varint((static_cast<uint64_t>(field) << 3) | wt); }
  void int_field(int field, int64_t v) { tag(field, kVarint); varint(static_cast<uint64_t>(v)); }
  void bool_field(int field, bool v) { int_field(field, v ? 1 : 0); }
  void bytes_field(int field, std::string_view s) {
    tag(field, kBytes);
    varint(s.size());
    out += s;
  }
  void float_field(int field, float f) {
    tag(field, kFixed32);
    char b[4];
    std::memcpy(b, &f, 4);  // little-endian host assumed (x86-64, aarch64)
    out.append(b, 4);
  }
};

bool is_byte_piece(std::string_view p) {
  return p.size() == 6 && p.substr(0, 3) == "<0x" && p[5] == '>' && std::isxdigit(static_cast<unsigned char>(p[3])) &&
         std::isxdigit(static_cast<unsigned char>(p[4]));
}

PieceType piece_type(TokenType t, std::string_view piece) {
  switch (t) {
    case TokenType::kUnknown: return kUnknown;
    case TokenType::kControl: return kControl;
    case TokenType::kUserDefined: return kUserDefined;
    case TokenType::kUnused: return kUnused;
    case TokenType::kByte: return is_byte_piece(piece) ? kByte : kNormal;
    default: return kNormal;
  }
}

struct Reader {
  std::string_view in;
  size_t pos = 0;
  bool failed = false;
  bool done() const { return pos >= in.size() || failed; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= in.size()) break;
      const auto b = static_cast<unsigned char>(in[pos++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    failed = true;
    return 0;
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (failed || n > in.size() - pos) { failed = true; return {}; }
    std::string_view s = in.substr(pos, n);
    pos += n;
    return s;
  }
  float fixed32() {
    if (in.size() - pos < 4) { failed = true; return 0; }
    float f;
    std::memcpy(&f, in.data() + pos, 4);
    pos += 4;
    return f;
  }
  void skip(int wt) {
    switch (wt) {
      case kVarint: varint(); break;
      case kFixed64: if (in.size() - pos < 8) failed = true; else pos += 8; break;
      case kBytes: bytes(); break;
      case kFixed32: fixed32(); break;
      default: failed = true;
    }
  }
};
}  // namespace

Result<std::string> build_sentencepiece_proto(const VocabData& vocab) {
  const size_t n = vocab.tokens.size();
  Writer w;
  std::unordered_set<std::string_view> seen;
  bool has_bytes = false, has_unknown = false;
  for (size_t i = 0; i < n; ++i) {
    std::string_view piece = vocab.tokens[i];
    const TokenType t = vocab.token_types.empty() ? TokenType::kNormal : vocab.token_types[i];
    PieceType type = piece_type(t, piece);
    if (static_cast<int32_t>(i) == vocab.unk_id) type = kUnknown;
    if (type == kUnknown && has_unknown) type = kControl;  // the library allows one <unk>
    std::string placeholder;
    if (piece.empty() || !seen.insert(piece).second) {
      placeholder = fmt::format("<kvscope_placeholder_{}>", i);
      piece = placeholder;
      type = kUnused;
    }
    has_bytes |= type == kByte;
    has_unknown |= type == kUnknown;
    Writer p;
    p.bytes_field(1, piece);
    p.float_field(2, vocab.scores.empty() ? 0.0f : vocab.scores[i]);
    p.int_field(3, type);
    w.bytes_field(1, p.out);
  }
  if (!has_unknown) return Error{"tokenizer: a SentencePiece vocabulary needs an unknown token (<unk>)"};

  Writer trainer;
  trainer.int_field(3, kModelTypeBpe);
  trainer.int_field(4, static_cast<int64_t>(n));
  trainer.bool_field(35, has_bytes);  // byte_fallback
  trainer.int_field(40, vocab.unk_id >= 0 ? vocab.unk_id : 0);
  trainer.int_field(41, vocab.bos_id);
  trainer.int_field(42, vocab.eos_id);
  trainer.int_field(43, vocab.pad_id);
  w.bytes_field(2, trainer.out);

  Writer normalizer;
  normalizer.bytes_field(1, "identity");
  normalizer.bool_field(3, false);  // add_dummy_prefix: SpmTokenizer adds it
  normalizer.bool_field(4, false);  // remove_extra_whitespaces: keep text as written
  normalizer.bool_field(5, true);   // escape_whitespaces: ' ' -> U+2581
  w.bytes_field(3, normalizer.out);
  return std::move(w.out);
}

Result<VocabData> parse_sentencepiece_proto(std::string_view serialized) {
  VocabData v;
  v.model = "llama";
  v.add_bos = true;
  v.add_space_prefix = true;  // NormalizerSpec default
  int model_type = 1;         // TrainerSpec default: UNIGRAM
  int64_t unk = 0, bos = 1, eos = 2, pad = -1;
  Reader r{serialized};
  while (!r.done()) {
    const uint64_t key = r.varint();
    const int field = static_cast<int>(key >> 3), wt = static_cast<int>(key & 7);
    if (field == 1 && wt == kBytes) {  // SentencePiece
      Reader p{r.bytes()};
      std::string piece;
      float score = 0;
      int type = kNormal;
      while (!p.done()) {
        const uint64_t k = p.varint();
        const int f = static_cast<int>(k >> 3), t = static_cast<int>(k & 7);
        if (f == 1 && t == kBytes) piece = std::string(p.bytes());
        else if (f == 2 && t == kFixed32) score = p.fixed32();
        else if (f == 3 && t == kVarint) type = static_cast<int>(p.varint());
        else p.skip(t);
      }
      r.failed |= p.failed;
      v.tokens.push_back(std::move(piece));
      v.scores.push_back(score);
      v.token_types.push_back(type >= 1 && type <= 6 ? static_cast<TokenType>(type) : TokenType::kNormal);
    } else if ((field == 2 || field == 3) && wt == kBytes) {  // TrainerSpec, NormalizerSpec
      Reader s{r.bytes()};
      while (!s.done()) {
        const uint64_t k = s.varint();
        const int f = static_cast<int>(k >> 3), t = static_cast<int>(k & 7);
        if (t != kVarint) { s.skip(t); continue; }
        const auto val = static_cast<int64_t>(s.varint());
        if (field == 3) {
          if (f == 3) v.add_space_prefix = val != 0;
          continue;
        }
        switch (f) {
          case 3: model_type = static_cast<int>(val); break;
          case 40: unk = static_cast<int32_t>(val); break;
          case 41: bos = static_cast<int32_t>(val); break;
          case 42: eos = static_cast<int32_t>(val); break;
          case 43: pad = static_cast<int32_t>(val); break;
          default: break;
        }
      }
      r.failed |= s.failed;
    } else {
      r.skip(wt);
    }
  }
  if (r.failed) return Error{"tokenizer.model: not a valid SentencePiece model (truncated protobuf)"};
  if (v.tokens.empty()) return Error{"tokenizer.model: the model has no pieces"};
  if (model_type != kModelTypeBpe)
    return Error{fmt::format("tokenizer.model: SentencePiece model type {} is not supported (only BPE, 2)", model_type)};
  const auto n = static_cast<int64_t>(v.tokens.size());
  auto id_or_none = [n](int64_t id) { return id >= 0 && id < n ? static_cast<int32_t>(id) : -1; };
  v.unk_id = id_or_none(unk);
  v.bos_id = id_or_none(bos);
  v.eos_id = id_or_none(eos);
  v.pad_id = id_or_none(pad);
  return v;
}

Result<VocabData> read_sentencepiece_model_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error{fmt::format("{}: cannot open", path)};
  std::stringstream ss;
  ss << f.rdbuf();
  auto v = parse_sentencepiece_proto(ss.str());
  if (!v) return Error{fmt::format("{}: {}", path, v.error())};
  return v;
}

}  // namespace kvscope
