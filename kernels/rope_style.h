// Which elements a rotary embedding rotates together. Shared by the rope
// kernels and the model config (a loader picks it per file).
#pragma once

namespace kvscope {

enum class RopeStyle {
  kAdjacentPairs,  // (x[2i], x[2i+1]) - Llama GGUFs (Q/K rows permuted at conversion)
  kHalfSplit,      // (x[i], x[i + d/2]) - Gemma, NeoX, unpermuted Hugging Face weights
};

}  // namespace kvscope
