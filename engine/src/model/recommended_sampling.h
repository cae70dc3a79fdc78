// Reading a model file's recommended sampling settings (RecommendedSampling,
// kvscope/sampling_defaults.h): GGUF general.sampling.* keys (the names
// llama.cpp's gguf-py writes and llama.cpp reads: temp, top_k, top_p, min_p,
// penalty_repeat, penalty_last_n) and a Hugging Face directory's
// generation_config.json (temperature, top_k, top_p, min_p,
// repetition_penalty). A value of the wrong type or out of range is left out
// with a note in `ignored`; it never stops a model from loading.
//   tested by tests/engine/model/recommended_sampling_test.cpp
#pragma once

#include <string>

#include "kvscope/sampling_defaults.h"
#include "model/gguf_file.h"

namespace kvscope {

RecommendedSampling read_gguf_sampling(const GgufFile& file);

// `dir`/generation_config.json; nothing recommended when the file is absent.
RecommendedSampling read_generation_config(const std::string& dir);

}  // namespace kvscope
