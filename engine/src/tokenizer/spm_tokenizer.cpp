#include "tokenizer/spm_tokenizer.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include "tokenizer/sentencepiece_proto.h"
#include "tokenizer/utf8.h"

namespace kvscope {

namespace {
constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kSpaceMarker.size()) == kSpaceMarker) {
      out += ' ';
      pos += kSpaceMarker.size();
    } else {
      out += text[pos++];
    }
  }
  return out;
}

// "<0x0A>" -> "\n"
std::string byte_of(std::string_view piece) {
  if (piece.size() != 6) return std::string(piece);
  const std::string hex(piece.substr(3, 2));
  return std::string(1, static_cast<char>(std::stoi(hex, nullptr, 16)));
}
}  // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab)
    : vocab_(std::move(vocab)), processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

SpmTokenizer::~SpmTokenizer() = default;

Result<std::unique_ptr<Tokenizer>> SpmTokenizer::create(const VocabData& data) {
  auto proto = build_sentencepiece_proto(data);
  if (!proto) return Error{proto.error()};
  auto vocab = Vocab::build(data);
  if (!vocab) return Error{vocab.error()};
  std::unique_ptr<SpmTokenizer> t(new SpmTokenizer(std::move(*vocab)));
  const auto status = t->processor_->LoadFromSerializedProto(*proto);
  if (!status.ok())
    return Error{fmt::format("tokenizer: sentencepiece rejected the vocabulary: {}", status.ToString())};

  t->bytes_.resize(t->vocab_.size());
  for (int32_t id = 0; id < t->vocab_.size(); ++id) {
    const TokenType type = t->vocab_.type(id);
    const std::string_view text = t->vocab_.text(id);
    if (type == TokenType::kControl || type == TokenType::kUnknown) continue;
    const bool is_byte = type == TokenType::kByte && text.size() == 6 && text.substr(0, 3) == "<0x";
    t->bytes_[id] = is_byte ? byte_of(text) : unescape_spaces(text);
  }
  for (int b = 0; b < 256; ++b) {
    const auto id = t->vocab_.find(fmt::format("<0x{:02X}>", b));
    t->byte_ids_[b] = id && t->vocab_.type(*id) == TokenType::kByte ? *id : -1;
  }
  EncodeIssues ignored;
  t->encode_valid("\xEF\xBF\xBD", t->replacement_ids_, ignored);  // U+FFFD
  if (ignored.num_replaced + ignored.num_dropped > 0) t->replacement_ids_.clear();
  return std::unique_ptr<Tokenizer>(std::move(t));
}

std::vector<int32_t> SpmTokenizer::encode(std::string_view text, bool parse_special, EncodeIssues* issues) const {
  std::vector<int32_t> out;
  EncodeIssues local;
  bool after_special = true;  // the start of the input counts as "after a special token"
  for (const auto& fragment : vocab_.split_special(text, parse_special)) {
    if (fragment.id >= 0) {
      out.push_back(fragment.id);
      after_special = true;
      continue;
    }
    std::string piece;
    if (vocab_.data().add_space_prefix && after_special) piece = " ";
    piece += fragment.text;
    after_special = false;
    encode_piece(piece, out, issues ? *issues : local);
  }
  return out;
}

void SpmTokenizer::encode_piece(std::string_view text, std::vector<int32_t>& out, EncodeIssues& issues) const {
  // Runs of valid UTF-8 go to the library; a merge never spans a malformed
  // byte (no piece contains one), so cutting there changes no other id.
  size_t run_begin = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 1;
    if (utf8::decode_one(text, pos, &len) >= 0) {
      pos += len;
      continue;
    }
    encode_valid(text.substr(run_begin, pos - run_begin), out, issues);
    const auto byte = static_cast<unsigned char>(text[pos]);
    ++issues.num_invalid_bytes;
    if (byte_ids_[byte] >= 0) {
      out.push_back(byte_ids_[byte]);
    } else {
      out.insert(out.end(), replacement_ids_.begin(), replacement_ids_.end());
      issues.add_replaced(byte, /*dropped=*/replacement_ids_.empty());
    }
    run_begin = ++pos;
  }
  encode_valid(text.substr(run_begin), out, issues);
}

void SpmTokenizer::encode_valid(std::string_view text, std::vector<int32_t>& out, EncodeIssues& issues) const {
  if (text.empty()) return;
  std::vector<int> ids;
  const int32_t unk = vocab_.data().unk_id;
  if (!processor_->Encode(text, &ids).ok()) {
    // Encode fails only on internal errors: one <unk> keeps positions honest.
    ids.assign(1, unk);
  }
  for (int id : ids) {
    if (id == unk || id < 0) {
      const bool dropped = id < 0 || vocab_.is_control(id);
      issues.add_replaced(-1, dropped);  // which character the library could not spell is not known here
      if (dropped) continue;
    }
    out.push_back(id);
  }
}

std::string SpmTokenizer::token_bytes(int32_t id, bool render_special) const {
  if (!vocab_.valid(id)) return {};
  const TokenType type = vocab_.type(id);
  if (type == TokenType::kControl || type == TokenType::kUnknown)
    return render_special ? std::string(vocab_.text(id)) : std::string();
  return bytes_[id];
}

}  // namespace kvscope
