// One prefill of a whole token sequence through a ModelRunner (or any
// Backend: the CUDA reference test runs it on the GPU), returning the
// logits of rows [first_row, tokens.size()): how the reference tests compare
// kvscope's forward pass with llama.cpp's on llama.cpp's own sequence
// (teacher forcing: every position sees the reference's tokens before it).
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_pool.h"
#include "runtime/backend.h"
#include "runtime/model_runner.h"

namespace kvscope::test {

// [tokens.size() - first_row][vocab]. The pool must have blocks for the
// sequence at block_size; they are given back before returning.
std::vector<float> teacher_forced_logits(ModelRunner& runner, BlockPool& pool, int32_t block_size,
                                         const std::vector<int32_t>& tokens, int32_t first_row = 0);
// The same through a backend, over the KV pool it uses (pool's blocks index it).
std::vector<float> teacher_forced_logits(Backend& backend, BlockPool& pool, int32_t block_size,
                                         const std::vector<int32_t>& tokens, int32_t first_row = 0);

}  // namespace kvscope::test
