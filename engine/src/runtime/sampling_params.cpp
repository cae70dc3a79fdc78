// SamplingParams::validate(): range checks with messages a person can act on.
// Comparisons are written so that NaN fails them (NaN compares false).
// Tested by tests/engine/runtime/sampler_test.cpp.
#include "kvscope/sampling_params.h"

#include <cmath>

#include <fmt/format.h>

namespace kvscope {

Status SamplingParams::validate() const {
  auto fail = [](std::string message) { return Status(Error{std::move(message)}); };

  if (!(std::isfinite(temperature) && temperature >= 0.0f))
    return fail(fmt::format("temperature must be a finite number >= 0 (0 = greedy), got {}",
                            temperature));
  if (top_k < 0)
    return fail(fmt::format("top_k must be >= 0 (0 = off), got {}", top_k));
  if (!(top_p > 0.0f && top_p <= 1.0f))
    return fail(fmt::format("top_p must be in (0, 1] (1 = off), got {}", top_p));
  if (!(min_p >= 0.0f && min_p <= 1.0f))
    return fail(fmt::format("min_p must be in [0, 1] (0 = off), got {}", min_p));
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f))
    return fail(fmt::format("repetition_penalty must be a finite number > 0 (1 = off), got {}",
                            repetition_penalty));
  if (repeat_last_n < -1)
    return fail(fmt::format("repeat_last_n must be >= -1 (0 = off, -1 = all recent tokens), got {}",
                            repeat_last_n));
  if (!std::isfinite(presence_penalty))
    return fail(fmt::format("presence_penalty must be a finite number, got {}", presence_penalty));
  if (!std::isfinite(frequency_penalty))
    return fail(fmt::format("frequency_penalty must be a finite number, got {}", frequency_penalty));
  if (max_tokens < 0)
    return fail(fmt::format("max_tokens must be >= 0 (0: run the prompt only), got {}", max_tokens));
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty())
      return fail(fmt::format("stop[{}] is empty; an empty stop string would end every "
                              "generation at once",
                              i));
  }
  return Status::success();
}

}  // namespace kvscope
