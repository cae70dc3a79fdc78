// decode_utf8_char (kvscope/utf8_text.h): the tokenizers' decoder, made public.
#include "kvscope/utf8_text.h"

#include "tokenizer/utf8.h"

namespace kvscope {

int32_t decode_utf8_char(std::string_view s, size_t pos, size_t* len) { return utf8::decode_one(s, pos, len); }

}  // namespace kvscope
