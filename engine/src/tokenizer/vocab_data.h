// VocabData: everything a tokenizer needs, as plain values. Filled from a GGUF
// file (read_vocab.h), a Hugging Face tokenizer.json (hf_tokenizer_json.h) or a
// SentencePiece tokenizer.model (sentencepiece_proto.h), so that the tokenizer
// classes never depend on a file format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope {

// Values of GGUF's tokenizer.ggml.token_type.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,       // <s>, <|im_start|>: never produced from plain text
  kUserDefined = 4,   // literal text the vocabulary always keeps whole
  kUnused = 5,
  kByte = 6,          // SentencePiece byte fallback <0xNN>
};

struct VocabData {
  std::string model = "gpt2";           // "llama" (SentencePiece), "gpt2" (byte-level BPE), "gemma4"
  std::string pre = "default";          // pre-tokenizer name (tokenizer.ggml.pre)
  std::vector<std::string> tokens;      // [num_tokens] token text as stored
  std::vector<float> scores;            // [num_tokens] or empty (SentencePiece merge priority)
  std::vector<TokenType> token_types;   // [num_tokens] or empty (all normal)
  std::vector<std::string> merges;      // [num_merges] "A B", rank = position
  int32_t bos_id = -1;                  // -1: none
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;                  // end of turn, when the file names one
  int32_t eom_id = -1;                  // end of message (tool calls), when named
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
  std::string chat_template;            // Jinja text, may be empty
  std::string architecture;             // general.architecture, for chat-template fallback
  std::string model_name;               // general.name (llama.cpp keys a few token rules on it)
};

}  // namespace kvscope
