// SentencePiece's ModelProto in protobuf wire format, written and read by
// hand. Why by hand: Debian's libsentencepiece-dev ships no
// sentencepiece_model.pb.h and the message is tiny (pieces, two specs), so
// ~150 lines of wire format save a protobuf build dependency. Field numbers
// follow sentencepiece_model.proto.
#pragma once

#include <string>
#include <string_view>

#include "kvscope/result.h"
#include "tokenizer/vocab_data.h"

namespace kvscope {

// A serialized ModelProto (what a tokenizer.model file holds; SpmTokenizer no
// longer runs the sentencepiece library, so this writer serves tests and
// tools that need such a file):
// BPE model (scores are merge priorities, as in Llama/Gemma vocabularies),
// byte fallback when <0xNN> pieces exist, identity normalizer that only turns
// spaces into U+2581. The dummy prefix is left off: SpmTokenizer adds the
// space itself so it can follow llama.cpp (a prefix after every special token).
// Empty or repeated pieces, which the library rejects, become unused
// placeholders so ids stay aligned.
Result<std::string> build_sentencepiece_proto(const VocabData& vocab);

// Reads a tokenizer.model file's bytes into VocabData (model "llama").
// Only BPE models are accepted; a precompiled normalization map is ignored,
// as in GGUF conversion.
Result<VocabData> parse_sentencepiece_proto(std::string_view serialized);

// Reads and parses a tokenizer.model file.
Result<VocabData> read_sentencepiece_model_file(const std::string& path);

}  // namespace kvscope
