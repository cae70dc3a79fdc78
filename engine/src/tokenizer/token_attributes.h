// Token attributes as llama.cpp keeps them: the GGUF token type turned into
// bits, then corrected by token text, because converted files often mark turn
// enders or fill-in-the-middle tokens as normal or user-defined. The
// corrections decide which literal text is split out as a special token
// (control tokens only with parse_special; user-defined ones always), which
// ids end generation, and where spaces around a special token are dropped
// (Phi-3). All facts from llama.cpp's llama_vocab::impl::load.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab_data.h"

namespace kvscope {

// Transparent hashing so that lookups by string_view allocate nothing.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

enum TokenAttr : uint16_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1 << 0,
  kAttrUnused = 1 << 1,
  kAttrNormal = 1 << 2,
  kAttrControl = 1 << 3,
  kAttrUserDefined = 1 << 4,
  kAttrByte = 1 << 5,
  kAttrLstrip = 1 << 6,  // spaces before the token's literal text are dropped
  kAttrRstrip = 1 << 7,  // spaces after it are dropped
};

struct TokenAttributes {
  std::vector<uint16_t> attrs;   // [num_tokens] TokenAttr bits
  std::vector<int32_t> eog_ids;  // end-of-generation ids, ascending
};

// `ids` maps each token text to its id (the last id for a repeated text, as
// llama.cpp). `model_name` is general.name, `architecture`
// general.architecture.
TokenAttributes compute_token_attributes(const VocabData& vocab, const TokenIdMap& ids);

}  // namespace kvscope
