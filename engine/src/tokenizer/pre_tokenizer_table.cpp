// The pre-tokenizer table (pre_tokenizer_table.h). Every regex here is the one
// llama.cpp actually runs for the name, rewritten in PCRE2 syntax:
//  - llama.cpp's own adaptations are kept (e.g. "(?i:'s|...)" spelled out as
//    "'[sS]|..."; bailingmoe's possessive "?+"/"++" made greedy).
//  - llama.cpp runs regexes that use \p{..} on a "collapsed" text in which
//    \p{Lu}, \p{Ll}, \p{Lt}, \p{Lm} and \p{Lo} all mean "any letter", so those
//    rows say \p{L}.
//  - llama.cpp replaces non-ASCII whitespace by U+000B before matching, so a
//    literal range that spans a whitespace code point (deepseek's U+0800..
//    U+4E00, U+3000..U+3002) is written here without it.
//  - Non-ASCII literals are written \x{...}, so the file stays ASCII.
// How PreTokenizer compiles them (\s as llama.cpp's whitespace set, $ only at
// the end) is in pre_tokenizer.cpp.
#include "tokenizer/pre_tokenizer_table.h"

#include <array>

namespace kvscope {

namespace {

// ---- Regex lists, one per llama.cpp pre-tokenizer type ----

// GPT-2: contractions, letter runs, number runs, other symbols, each with an
// optional leading space; whitespace runs leave their last space to the next
// word. (llama.cpp's string stops at "\s+(?!\S)" but its hand-written matcher
// for it ends with "\s+" as here; the two split identically.)
constexpr std::string_view kGpt2Words =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Contractions in either case, as llama.cpp spells "(?i:'s|'t|...)".
#define KVSCOPE_CONTRACTIONS R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"
// Llama 3: a letter run may take one leading non-letter, numbers in groups of
// up to three, punctuation keeps trailing newlines, newline runs kept whole.
constexpr std::string_view kLlama3Words = KVSCOPE_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: as Llama 3 but one digit per word.
constexpr std::string_view kQwen2Words = KVSCOPE_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Runs of non-newlines and runs of newlines (Gemma 4, Laguna's first step).
constexpr std::string_view kNewlineRuns = R"([^\n]+|[\n]+)";
// CJK ideographs, U+0800..U+4E00 and Hangul, as deepseek writes it; the
// whitespace code points inside U+0800..U+4E00 are cut out (see top).
constexpr std::string_view kDeepseekCjk =
    R"([\x{4E00}-\x{9FA5}\x{0800}-\x{167F}\x{1681}-\x{1FFF}\x{200B}-\x{2027}\x{202A}-\x{202E})"
    R"(\x{2030}-\x{205E}\x{2060}-\x{2FFF}\x{3001}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
// Han and kana (deepseek-v3 and its relatives).
constexpr std::string_view kHanKana = R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)";

constexpr std::string_view kGpt2[] = {kGpt2Words};
constexpr std::string_view kDefault[] = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Words, R"(\p{N}+)", R"([0-9][0-9][0-9])"};
constexpr std::string_view kFalcon[] = {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2Words, R"([0-9][0-9][0-9])"};
constexpr std::string_view kStarcoder[] = {R"(\p{N})", kGpt2Words};
constexpr std::string_view kLlama3[] = {kLlama3Words};
constexpr std::string_view kQwen2[] = {kQwen2Words};
constexpr std::string_view kQwen35[] = {KVSCOPE_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kJais2[] = {KVSCOPE_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+)"
    R"(|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S))"
    R"(|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})"};
constexpr std::string_view kDeepseekLlm[] = {
    R"([\r\n])",
    // Letters of the Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, ...
    // scripts, listed range by range as deepseek's tokenizer.json does.
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF})"
    R"(\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})"
    R"(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})"
    R"(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})"
    R"(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})"
    R"(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})"
    R"(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134})"
    R"(\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787})"
    R"(\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})"
    R"(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
    R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)",
    // ASCII and full-width punctuation, curly quotes, U+3001..U+3002.
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3001}-\x{3002}]+)",
    R"(\s+$)",
    kDeepseekCjk,
    R"(\p{N}+)",
};
constexpr std::string_view kDeepseekCoder[] = {
    R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})",
};
constexpr std::string_view kDeepseek3Words =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)re"
    R"re(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kDeepseek3[] = {R"(\p{N}{1,3})", kHanKana, kDeepseek3Words};
constexpr std::string_view kSpark25[] = {
    R"(\p{N}{1,3})",
    kHanKana,
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)re"
    R"re(| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)re",
    R"(\p{N})",
};
constexpr std::string_view kYoutu[] = {
    // Hangul, CJK punctuation, Bopomofo, Han and kana runs.
    R"([\x{AC00}-\x{D7A3}\x{3131}-\x{318E}]+)"
    R"(|[\x{FF01}\x{2026}\x{201C}\x{201D}\x{2018}\x{2019}\x{2014}\x{FF1A}\x{FF1B}\x{FF0C}\x{3001}-\x{303F}\x{FE30}-\x{FE4F}]+)"
    R"(|[\x{3105}-\x{312F}]+|[\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
    R"([^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+)" KVSCOPE_CONTRACTIONS
    R"(?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
};
constexpr std::string_view kPoro[] = {R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)"};
constexpr std::string_view kViking[] = {
    R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)", R"(\p{N})"};
// Tekken (Mistral): upper-then-lower letter runs via lookaheads; on letters
// outside ASCII both "[^a-z]" and "[^A-Z]" hold, as in llama.cpp.
constexpr std::string_view kTekken[] = {
    R"([^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])*(?:(?=\p{L})[^A-Z])+)"
    R"(|[^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])+(?:(?=\p{L})[^A-Z])*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kChameleon[] = {
    R"(<sentinel:[0-9]+>)",   R"((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)", R"(([\t\n]|    |  ))",
    R"(\p{N})",               R"([\p{P}!-/:-@\[-`{-~])",                kGpt2Words,
};
constexpr std::string_view kGpt4o[] = {
    R"([^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])*(?:(?=\p{L})[^A-Z])+)" KVSCOPE_CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])+(?:(?=\p{L})[^A-Z])*)" KVSCOPE_CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kGraniteEmbMulti[] = {
    R"([^\r\n\p{L}\p{N}]?(?:(?=[\p{L}\p{M}])[^a-z])*(?:(?=[\p{L}\p{M}])[^A-Z])+)" KVSCOPE_CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?(?:(?=[\p{L}\p{M}])[^a-z])+(?:(?=[\p{L}\p{M}])[^A-Z])*)" KVSCOPE_CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kBailingMoe[] = {
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"};
constexpr std::string_view kSeedCoder[] = {KVSCOPE_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kUfakzeka[] = {
    R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kLaguna[] = {kNewlineRuns, kQwen2Words};
constexpr std::string_view kExaoneMoe[] = {KVSCOPE_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?)"
    R"(|\s*[\r\n]|\s+(?!\S)|\s+)"};
constexpr std::string_view kNewlines[] = {kNewlineRuns};
constexpr std::string_view kMinicpm5[] = {R"(\p{N}{1,3})", KVSCOPE_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};

#undef KVSCOPE_CONTRACTIONS

// ---- The rows: every name llama.cpp accepts for a BPE vocabulary ----

struct Flags {
  bool ignore_merges = false;
  bool clean_spaces = true;
  std::optional<bool> add_bos_default;
};
constexpr Flags kPlain{false, true, std::nullopt};
constexpr Flags kNoClean{false, false, std::nullopt};
constexpr Flags kNoCleanIgnoreMerges{true, false, std::nullopt};
constexpr Flags kIgnoreMerges{true, true, std::nullopt};

constexpr PreTokenizerRule row(std::string_view name, std::span<const std::string_view> regexes, Flags f = kPlain) {
  PreTokenizerRule r;
  r.name = name;
  r.regexes = regexes;
  r.ignore_merges = f.ignore_merges;
  r.clean_spaces = f.clean_spaces;
  r.add_bos_default = f.add_bos_default;
  return r;
}

// SentencePiece-style BPE on raw UTF-8 with U+2581 for spaces (Gemma 4).
constexpr PreTokenizerRule spm_style_row(std::string_view name, bool gemma4, bool clean_spaces) {
  PreTokenizerRule r;
  r.name = name;
  r.regexes = kNewlines;
  r.byte_level = false;
  r.escape_spaces = true;
  r.whole_newline_runs = gemma4;
  r.force_add_bos = gemma4;
  r.clean_spaces = clean_spaces;
  return r;
}

constexpr Flags kLlama3Flags{true, true, true};

const std::array kRules = {
    row("default", kDefault),
    // kvscope's own name for GPT-2's split (tokenizer.json without a GGUF name).
    row("gpt2", kGpt2),
    // Llama 3 and the vocabularies that copied its split.
    row("llama3", kLlama3, kLlama3Flags),
    row("llama-v3", kLlama3, kLlama3Flags),
    row("llama-bpe", kLlama3, kLlama3Flags),
    row("falcon3", kLlama3, kLlama3Flags),
    row("falcon-h1", kLlama3, kLlama3Flags),
    row("pixtral", kLlama3, kLlama3Flags),
    row("midm-2.0", kLlama3, kLlama3Flags),
    row("lfm2", kLlama3, kLlama3Flags),
    row("jina-v5-nano", kLlama3, kLlama3Flags),
    row("dbrx", kLlama3),
    row("smaug-bpe", kLlama3),
    row("chatglm-bpe", kLlama3),
    row("glm4", kLlama3, kIgnoreMerges),
    row("glm5", kLlama3, kIgnoreMerges),
    row("jais-2", kJais2),
    row("minicpm5", kMinicpm5, kIgnoreMerges),
    // DeepSeek.
    row("deepseek-llm", kDeepseekLlm, kNoClean),
    row("deepseek-coder", kDeepseekCoder, kNoClean),
    row("deepseek-v3", kDeepseek3, kNoClean),
    row("hunyuan-dense", kDeepseek3, kNoClean),
    row("hy_v4", kDeepseek3, kNoClean),
    row("joyai-llm", kDeepseek3, kNoClean),
    row("spark2_5", kSpark25, kNoClean),
    row("youtu", kYoutu, kNoCleanIgnoreMerges),
    // GPT-2's split alone.
    row("gpt-2", kGpt2),
    row("phi-2", kGpt2),
    row("jina-es", kGpt2),
    row("jina-de", kGpt2),
    row("gigachat", kGpt2),
    row("jina-v2-es", kGpt2),
    row("jina-v2-de", kGpt2),
    row("a.x-4.0", kGpt2),
    row("mellum", kGpt2),
    row("modern-bert", kGpt2),
    row("jina-v1-en", kGpt2),
    row("jina-v2-code", kGpt2),
    row("roberta-bpe", kGpt2),
    row("mpt", kGpt2),
    row("olmo", kGpt2),
    row("jais", kGpt2),
    row("exaone4", kGpt2),
    row("trillion", kGpt2, kNoClean),
    row("granite-docling", kGpt2, kNoClean),
    row("falcon", kFalcon),
    // Digits one by one, then GPT-2's split.
    row("starcoder", kStarcoder),
    row("refact", kStarcoder),
    row("command-r", kStarcoder, kNoClean),
    row("smollm", kStarcoder, kNoClean),
    row("codeshell", kStarcoder),
    row("exaone", kStarcoder),
    row("minerva-7b", kStarcoder),
    row("mellum2", kStarcoder),
    // Qwen2's split.
    row("qwen2", kQwen2, kNoClean),
    row("deepseek-r1-qwen", kQwen2, kNoClean),
    row("kormo", kQwen2, kNoClean),
    row("f2llmv2", kQwen2, kNoClean),
    row("megrez", kQwen2),
    row("stablelm2", kQwen2),
    row("hunyuan", kQwen2, kNoClean),
    row("solar-open", kQwen2, kNoClean),
    row("grok-2", kQwen2, kNoClean),
    row("qwen35", kQwen35, kNoClean),
    row("ufakzeka", kUfakzeka, kNoClean),
    row("laguna", kLaguna, kNoClean),
    row("seed-coder", kSeedCoder, kNoClean),
    row("bailingmoe", kBailingMoe, kNoClean),
    row("bailingmoe2", kBailingMoe, kNoClean),
    row("llada-moe", kBailingMoe, kNoClean),
    row("exaone-moe", kExaoneMoe),
    // Split at punctuation, no letter/number classes.
    row("poro-chat", kPoro, kNoClean),
    row("bloom", kPoro),
    row("gpt3-finnish", kPoro),
    row("viking", kViking, kNoClean),
    // Case-aware letter runs.
    row("tekken", kTekken, Flags{true, false, true}),
    row("gpt-4o", kGpt4o, kNoClean),
    row("llama4", kGpt4o, kNoClean),
    row("kanana2", kGpt4o, kNoClean),
    row("talkie", kGpt4o, kNoClean),
    row("minimax-m2", kGpt4o, kNoClean),
    row("granite-embed-multi-97m", kGraniteEmbMulti, kNoCleanIgnoreMerges),
    row("chameleon", kChameleon, Flags{false, false, true}),
    // SentencePiece-style BPE.
    spm_style_row("gemma4", /*gemma4=*/true, /*clean_spaces=*/true),
    spm_style_row("granite-embed-multi-311m", /*gemma4=*/true, /*clean_spaces=*/true),
    spm_style_row("sarvam-moe", /*gemma4=*/false, /*clean_spaces=*/false),
};

// Names llama.cpp splits with hand-written code rather than a regex list.
struct Unsupported {
  std::string_view name;
  std::string_view reason;
};
constexpr Unsupported kUnsupported[] = {
    {"kimi-k2", "llama.cpp splits it with hand-written Han-aware code, not a regex"},
    {"afmoe", "its digit grouping is hand-written code in llama.cpp, not a regex"},
    {"tiny_aya", "its digit grouping is hand-written code in llama.cpp, not a regex"},
    {"cohere2moe", "its digit grouping is hand-written code in llama.cpp, not a regex"},
    {"superbpe", "its zero-width digit split depends on std::regex's empty-match iteration"},
    {"whitespace", "it belongs to the 'whitespace' tokenizer model, not byte-level BPE"},
};

}  // namespace

const PreTokenizerRule* find_pre_tokenizer_rule(std::string_view name) {
  for (const PreTokenizerRule& r : kRules) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string_view unsupported_pre_tokenizer_reason(std::string_view name) {
  for (const Unsupported& u : kUnsupported) {
    if (u.name == name) return u.reason;
  }
  return {};
}

std::vector<std::string_view> supported_pre_tokenizer_names() {
  std::vector<std::string_view> names;
  names.reserve(kRules.size());
  for (const PreTokenizerRule& r : kRules) names.push_back(r.name);
  return names;
}

}  // namespace kvscope
