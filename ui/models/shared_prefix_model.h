// SharedPrefixModel: the groups of sequences whose block tables start with
// the same physical blocks (prefix-cache hits and the n > 1 siblings of one
// request), one row per group, from the latest EngineSnapshot.
//
// The groups are the branches of a trie over the running sequences' block
// tables: a row is a run of trie nodes that the same set of (>= 2) sequences
// pass through. Groups nest: siblings of one request that share a whole
// prompt also share, with other requests, the system prompt's blocks before
// it. A nested row lists its whole shared prefix (the enclosing group's
// blocks first, then " | " and its own), but counts as saved only its own
// blocks, (n - 1) x their tokens, so that the rows add up to the total and
// no block is counted twice. Swapped sequences are left out: their tables
// hold swap-space ids, not pool blocks.
//
// The last step's cascade attention (EngineSnapshot::cascade_groups) is
// attached to the row whose own blocks it read: Cascade says how many shared
// tokens one pass served to how many sequences ("yes: 1984 × 32"), KvNotRead the
// K/V bytes the other members did not read because of it: the engine's count
// for the step (StepStats::cascade_kv_bytes_saved, what the kernel really
// skipped) shared out over the step's passes by (members - 1) x shared
// tokens, or, from an engine that does not count, that product x the model's
// K/V bytes per token.
//
// The Requests column lists request ids as integers in numeric order ("9, 10,
// 11 #1, 11 #2": a completion number only for parallel completions).
// Rows keep their place while their group lives (keyed by where the group's
// own blocks start), so a view does not jump at 20 Hz. Checked with
// QAbstractItemModelTester in tests/ui/shared_prefix_model_test.cpp.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <QAbstractTableModel>
#include <QSet>

#include "engine_types.h"

namespace kvscope::ui {

struct SharedPrefixGroup {
  std::vector<int32_t> blocks;  // [num_shared_blocks] physical ids of the whole shared prefix
  int32_t first_own_block = 0;  // blocks before this index belong to an enclosing group
  int64_t num_shared_tokens = 0;  // written slots of all the shared blocks
  int64_t num_own_tokens = 0;     // written slots of blocks [first_own_block, end)
  std::vector<std::pair<RequestId, int32_t>> sequences;  // (request id, index), sorted
  int64_t num_tokens_saved() const {
    return sequences.empty() ? 0 : static_cast<int64_t>(sequences.size() - 1) * num_own_tokens;
  }
  // The last step's cascade passes over this prefix (0 when none ran here).
  int32_t num_cascade_passes = 0;
  int32_t num_cascade_tokens = 0;  // positions the (longest) shared pass covered
  int32_t num_cascade_seqs = 0;    // sequences it served
  int64_t num_cascade_tokens_not_read = 0;  // sum over passes of (members - 1) x shared tokens
};

// Every group of >= 2 non-swapped sequences sharing leading blocks, outermost
// first. O(total block-table length): a trie, no string keys.
std::vector<SharedPrefixGroup> findSharedPrefixes(const EngineSnapshot& snapshot);

// Fills the num_cascade_* fields of `groups` (from findSharedPrefixes) from the
// last step's cascade passes. A pass belongs to the group that holds all the
// blocks it read with at least one of them among the group's own blocks: the
// group of the sequences running through its deepest block, whatever order
// the engine lists the blocks in. A pass no group holds is left out.
void attachCascadePasses(std::vector<SharedPrefixGroup>& groups, const std::vector<CascadeGroupSnapshot>& passes);

class SharedPrefixModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Requests, NumSequences, Blocks, SharedTokens, TokensSaved, BytesSaved, Cascade, KvNotRead, NumColumns };

  explicit SharedPrefixModel(QObject* parent = nullptr);

  void setSnapshot(const SnapshotPtr& snapshot);
  // Bytes of K and V per token (ModelInfo::kv_bytes_per_token); 0: unknown,
  // the bytes column shows "—".
  void setKvBytesPerToken(qint64 bytes);
  // The cascade mode in force: a group's "no" says why by it (tooltip).
  void setCascadeMode(CascadeMode mode) { cascade_mode_ = mode; }

  const std::vector<SharedPrefixGroup>& groups() const { return groups_; }
  int64_t totalTokensSaved() const;
  int64_t totalBytesSaved() const { return totalTokensSaved() * kv_bytes_per_token_; }
  // The last step as the snapshot told it (StepStats): attention time and the
  // cascade totals, also those of passes no row holds.
  const StepStats& lastStep() const { return last_step_; }
  // The KvNotRead column of `group` in bytes; -1 when unknown (no pass, or
  // neither the engine's count nor the bytes per token).
  int64_t kvBytesNotRead(const SharedPrefixGroup& group) const;
  qint64 kvBytesPerToken() const { return kv_bytes_per_token_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // "1.5 MiB", "384 KiB", "12 B".
  static QString formatBytes(int64_t bytes);
  // Why `group` had no cascade pass in the last step, by the mode in force.
  QString noCascadeReason(const SharedPrefixGroup& group) const;

 signals:
  // After every setSnapshot / setKvBytesPerToken.
  void totalsChanged(qint64 tokens_saved, qint64 bytes_saved);

 private:
  std::vector<SharedPrefixGroup> groups_;
  QSet<quint64> parallel_;  // requests shown with their completion number (models/sequence_label.h)
  qint64 kv_bytes_per_token_ = 0;
  CascadeMode cascade_mode_ = CascadeMode::Auto;
  StepStats last_step_;
  int64_t cascade_tokens_not_read_ = 0;  // (members - 1) x shared tokens over all the step's passes
};

}  // namespace kvscope::ui
