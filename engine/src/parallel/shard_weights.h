// The weights of one tensor-parallel rank, repacked: which rows and columns
// of each matrix the rank multiplies (ShardPlan), as LinearGroups.
//   Q|K|V, gate|up   column-parallel: the rank's output rows (views, no copy)
//   wo, down         row-parallel: the rank's K range, one group (tp_reduce =
//                    fast) or one per canonical chunk (deterministic)
//   head             the rank's vocabulary rows
// With ShardPlan::whole() these are exactly the groups a plain ModelRunner
// packs. docs/tensor-parallel.md.
#pragma once

#include <functional>
#include <initializer_list>
#include <vector>

#include "model/model_weights.h"
#include "parallel/shard_plan.h"
#include "runtime/linear_group.h"

namespace kvscope {

struct ShardLinears {
  LinearGroup qkv, gate_up;
  // Row-parallel parts in K order: one (fast) or the rank's canonical chunks.
  std::vector<LinearGroup> wo, down;
};

// Rows [row_begin, row_begin + num_rows) of m (a view into m's data).
WeightMatrix row_slice(const WeightMatrix& m, int64_t row_begin, int64_t num_rows);

// Called after each group (Q|K|V, wo, gate|up, down) with the matrices it
// packed; returning false stops (load progress and cancel).
using PackedGroup = std::function<bool(std::initializer_list<const WeightMatrix*> matrices)>;
// Packs `out`'s groups one after the other; false when after_group said stop.
bool pack_layer_shard(const LayerWeights& layer, const ModelConfig& config, const ShardPlan& plan,
                      const RankShard& shard, ShardLinears& out, const PackedGroup& after_group);
LinearGroup pack_head_shard(const ModelWeights& weights, const RankShard& shard);

// K offset, within the rank's slice of wo's / down's input, of local part i,
// and its width (one part in fast mode: the whole slice).
struct KPart {
  int64_t offset = 0, size = 0;
};
std::vector<KPart> wo_parts(const ModelConfig& config, const ShardPlan& plan, const RankShard& shard);
std::vector<KPart> down_parts(const ShardPlan& plan, const RankShard& shard);

}  // namespace kvscope
