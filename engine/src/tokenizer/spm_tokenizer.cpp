#include "tokenizer/spm_tokenizer.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include "tokenizer/sentencepiece_proto.h"

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
  return std::unique_ptr<Tokenizer>(std::move(t));
}

std::vector<int32_t> SpmTokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> out;
  std::vector<int> ids;
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
    ids.clear();
    if (!processor_->Encode(piece, &ids).ok()) {
      // Encode fails only on internal errors; emitting <unk> keeps positions honest.
      if (vocab_.data().unk_id >= 0) out.push_back(vocab_.data().unk_id);
      continue;
    }
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

std::string SpmTokenizer::token_bytes(int32_t id, bool render_special) const {
  if (!vocab_.valid(id)) return {};
  const TokenType type = vocab_.type(id);
  if (type == TokenType::kControl || type == TokenType::kUnknown)
    return render_special ? std::string(vocab_.text(id)) : std::string();
  return bytes_[id];
}

}  // namespace kvscope
