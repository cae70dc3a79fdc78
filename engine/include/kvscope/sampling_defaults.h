// Sampling defaults: what a chat uses for each sampling parameter the user
// has not set. Two layers, the first that has a value wins:
//   1. the model file's recommendation (RecommendedSampling: GGUF
//      general.sampling.* keys, which llama.cpp also reads, or a Hugging Face
//      directory's generation_config.json);
//   2. kvscope's defaults (kvscope_sampling_defaults()): llama.cpp's
//      (common/common.h, common_params_sampling) plus a repetition penalty.
// Front ends layer the user's own choices on top and say where each value in
// force came from (the chat's conversation header).
//   tested by tests/engine/model/recommended_sampling_test.cpp
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/sampling_params.h"

namespace kvscope {

// What a model file recommends; unset fields: the file says nothing.
struct RecommendedSampling {
  std::optional<float> temperature;         // general.sampling.temp / "temperature"
  std::optional<int32_t> top_k;             // general.sampling.top_k / "top_k"
  std::optional<float> top_p;               // general.sampling.top_p / "top_p"
  std::optional<float> min_p;               // general.sampling.min_p / "min_p"
  std::optional<float> repetition_penalty;  // general.sampling.penalty_repeat / "repetition_penalty"
  std::optional<int32_t> repeat_last_n;     // general.sampling.penalty_last_n
  std::string source;                       // "GGUF general.sampling.*", "generation_config.json"; "" when none
  // Recommendations left out because SamplingParams::validate() refused them,
  // each "key: message" (a model file must not stop a model from loading).
  std::vector<std::string> ignored;

  bool empty() const {
    return !temperature && !top_k && !top_p && !min_p && !repetition_penalty && !repeat_last_n;
  }
};

// The SamplingParams fields a model file can recommend, by the names that
// SamplingParams::validate() messages use.
inline constexpr std::array<std::string_view, 6> kRecommendableSamplingFields = {
    "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "repeat_last_n"};

// llama.cpp's defaults (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05,
// penalty window 64) with a repetition penalty of 1.1 where llama.cpp now has
// 1.0 (off): at 1.0 the default model (SmolLM2-135M-Instruct), asked for a
// limerick, repeated one sentence for 450 of 488 tokens; 1.1 over the last 64
// tokens was llama.cpp's own default before it turned the penalty off, and is
// the smallest common value that breaks such loops in a model this small.
// max_tokens and the rest are SamplingParams' own defaults.
SamplingParams kvscope_sampling_defaults();

struct SamplingDefaults {
  SamplingParams params;                // kvscope's defaults with the model's recommendations applied
  std::vector<std::string> from_model;  // the recommendable fields whose value is the model file's
  std::string model_source;             // RecommendedSampling::source

  bool is_from_model(std::string_view field) const;
};

// Layers `recommended` over kvscope_sampling_defaults().
SamplingDefaults resolve_sampling_defaults(const RecommendedSampling& recommended);

// Copies field `field` (one of kRecommendableSamplingFields) from `from` into `to`.
void copy_sampling_field(std::string_view field, const SamplingParams& from, SamplingParams& to);

}  // namespace kvscope
