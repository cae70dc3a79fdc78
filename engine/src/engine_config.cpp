#include <fmt/format.h>

#include "kvscope/engine_config.h"
#include "kvscope/request.h"

namespace kvscope {

Status EngineConfig::validate() const {
  auto range = [](const char* name, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi) return Error{fmt::format("{} = {} is out of range [{}, {}]", name, v, lo, hi)};
    return Status::success();
  };
  for (const Status& s : {range("threads", num_threads, 0, 1024), range("block size", block_size, 1, 2048),
                          range("KV blocks", num_blocks, 0, 1 << 24), range("max sequences", max_seqs, 1, 4096),
                          range("max batched tokens", max_batched_tokens, 1, 1 << 20),
                          range("max model length", max_model_len, 0, 1 << 22)}) {
    if (!s.ok()) return s;
  }
  if (num_blocks == 0 && kv_budget_bytes <= 0) return Error{"KV budget must be positive"};
  if (model_path.empty()) return Error{"no model file given"};
  return Status::success();
}

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::None: return "none";
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::ContextFull: return "context_full";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "unknown";
}

}  // namespace kvscope
