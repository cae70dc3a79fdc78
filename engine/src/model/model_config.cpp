#include "model/model_config.h"

#include <cmath>

namespace kvscope {

float ModelConfig::softmax_scale() const {
  return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

}  // namespace kvscope
