#include "scheduler/scheduler.h"

#include <algorithm>

namespace kvscope {

Scheduler::Scheduler(int32_t max_seqs, int32_t max_batched_tokens, BlockPool& pool)
    : max_seqs_(max_seqs), max_batched_tokens_(max_batched_tokens), pool_(pool) {}

void Scheduler::add(std::unique_ptr<Sequence> seq) {
  seq->state = SequenceState::Waiting;
  waiting_.push_back(std::move(seq));
}

Sequence* Scheduler::find(RequestId id) {
  for (auto& s : running_) if (s->id == id) return s.get();
  for (auto& s : waiting_) if (s->id == id) return s.get();
  return nullptr;
}

int32_t Scheduler::blocks_still_reserved() const {
  int32_t total = 0;
  for (const auto& s : running_) total += s->table.num_blocks_needed(s->max_total_tokens);
  return total;
}

std::vector<ScheduledSequence> Scheduler::schedule() {
  std::vector<ScheduledSequence> out;
  int32_t budget = max_batched_tokens_;
  for (auto& s : running_) {
    if (budget == 0) break;
    if (s->state != SequenceState::Running) continue;
    const int32_t rows = std::min(s->num_uncomputed(), budget);
    if (rows == 0) continue;
    s->table.grow(pool_, s->num_computed + rows);  // inside its reservation
    out.push_back({s.get(), rows});
    budget -= rows;
  }
  int32_t free_unreserved = pool_.num_free_blocks() - blocks_still_reserved();
  while (!waiting_.empty() && budget > 0 && static_cast<int32_t>(running_.size()) < max_seqs_) {
    Sequence& s = *waiting_.front();
    const int32_t need = s.table.num_blocks_needed(s.max_total_tokens);
    if (need > free_unreserved) break;  // first come, first served: no overtaking
    free_unreserved -= need;
    s.state = SequenceState::Running;
    const int32_t rows = std::min(s.num_uncomputed(), budget);
    s.table.grow(pool_, s.num_computed + rows);
    out.push_back({&s, rows});
    budget -= rows;
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  return out;
}

std::vector<std::unique_ptr<Sequence>> Scheduler::reap_finished() {
  std::vector<std::unique_ptr<Sequence>> done;
  auto take = [&](auto& queue) {
    for (auto it = queue.begin(); it != queue.end();) {
      if ((*it)->state == SequenceState::Finished) {
        (*it)->table.release_all(pool_);
        done.push_back(std::move(*it));
        it = queue.erase(it);
      } else {
        ++it;
      }
    }
  };
  take(running_);
  take(waiting_);
  return done;
}

}  // namespace kvscope
