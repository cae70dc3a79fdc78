// Sampling defaults: kvscope's, and a model file's recommendation over them
// (see kvscope/sampling_defaults.h).
#include "kvscope/sampling_defaults.h"

#include <algorithm>

namespace kvscope {

SamplingParams kvscope_sampling_defaults() {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  p.repetition_penalty = 1.1f;  // see the header: llama.cpp's 1.0 lets the default model loop
  p.repeat_last_n = 64;
  return p;
}

bool SamplingDefaults::is_from_model(std::string_view field) const {
  return std::find(from_model.begin(), from_model.end(), field) != from_model.end();
}

SamplingDefaults resolve_sampling_defaults(const RecommendedSampling& r) {
  SamplingDefaults d;
  d.params = kvscope_sampling_defaults();
  d.model_source = r.source;
  auto take = [&](const char* field, const auto& value, auto& into) {
    if (!value) return;
    into = *value;
    d.from_model.emplace_back(field);
  };
  take("temperature", r.temperature, d.params.temperature);
  take("top_k", r.top_k, d.params.top_k);
  take("top_p", r.top_p, d.params.top_p);
  take("min_p", r.min_p, d.params.min_p);
  take("repetition_penalty", r.repetition_penalty, d.params.repetition_penalty);
  take("repeat_last_n", r.repeat_last_n, d.params.repeat_last_n);
  return d;
}

void copy_sampling_field(std::string_view field, const SamplingParams& from, SamplingParams& to) {
  if (field == "temperature") to.temperature = from.temperature;
  else if (field == "top_k") to.top_k = from.top_k;
  else if (field == "top_p") to.top_p = from.top_p;
  else if (field == "min_p") to.min_p = from.min_p;
  else if (field == "repetition_penalty") to.repetition_penalty = from.repetition_penalty;
  else if (field == "repeat_last_n") to.repeat_last_n = from.repeat_last_n;
}

}  // namespace kvscope
