#include "support/teacher_forced.h"

#include "kv/block_table.h"
#include "runtime/step_batch.h"

namespace kvscope::test {

namespace {

template <typename Forward>
std::vector<float> run_teacher_forced(Forward& forward, BlockPool& pool, int32_t block_size,
                                      const std::vector<int32_t>& tokens, int32_t first_row) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  BlockTable table(block_size);
  table.grow(pool, n);
  std::vector<int64_t> slots(tokens.size());
  for (int32_t i = 0; i < n; ++i) slots[static_cast<size_t>(i)] = table.slot(i);
  StepBatch batch;
  batch.clear();
  batch.add_sequence(tokens.data(), n, 0, slots.data(), table.blocks(), n - first_row);
  std::vector<float> logits;
  forward.forward(batch, logits);
  table.release_all(pool);
  return logits;
}

}  // namespace

std::vector<float> teacher_forced_logits(ModelRunner& runner, BlockPool& pool, int32_t block_size,
                                         const std::vector<int32_t>& tokens, int32_t first_row) {
  return run_teacher_forced(runner, pool, block_size, tokens, first_row);
}

std::vector<float> teacher_forced_logits(Backend& backend, BlockPool& pool, int32_t block_size,
                                         const std::vector<int32_t>& tokens, int32_t first_row) {
  return run_teacher_forced(backend, pool, block_size, tokens, first_row);
}

}  // namespace kvscope::test
