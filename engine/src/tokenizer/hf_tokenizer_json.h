// Hugging Face tokenizer files -> VocabData, so a model directory runs the
// same tokenizer classes as a GGUF file. tokenizer.json must be a byte-level
// BPE (GPT-2 style) model; its pre_tokenizer is mapped to one of the
// PreTokenizer names. tokenizer.model (SentencePiece) goes through
// sentencepiece_proto.h.
#pragma once

#include <string>
#include <string_view>

#include "kvscope/result.h"
#include "tokenizer/vocab_data.h"

namespace kvscope {

// Parses tokenizer.json text: model.vocab, model.merges (either "a b" or
// ["a", "b"]), added_tokens (special -> control, others user-defined) and
// pre_tokenizer. bos/eos are left unset (they live in tokenizer_config.json).
Result<VocabData> parse_tokenizer_json(std::string_view json_text);

// Reads a Hugging Face model directory: tokenizer.json, else tokenizer.model;
// then tokenizer_config.json if present for bos_token, eos_token,
// add_bos_token and chat_template.
Result<VocabData> read_hf_tokenizer_dir(const std::string& dir);

}  // namespace kvscope
