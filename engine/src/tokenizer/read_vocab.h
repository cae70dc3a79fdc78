// read_vocab: the tokenizer.* keys of a GGUF file -> VocabData. The only
// place the tokenizer code knows about GGUF.
#pragma once

#include "kvscope/result.h"
#include "tokenizer/vocab_data.h"

namespace kvscope {

class GgufFile;

// Reads tokenizer.ggml.{model,pre,tokens,scores,token_type,merges,*_id,
// add_*} and tokenizer.chat_template. Missing flags take llama.cpp's
// defaults for the model kind (SentencePiece: add BOS and a space prefix;
// BPE: neither). Errors name the missing or malformed key.
Result<VocabData> read_vocab(const GgufFile& file);

}  // namespace kvscope
