// EngineWorker: one engine step per event-loop turn (see engine_worker.h).
#include "engine_worker.h"

#include <algorithm>
#include <random>

#include <QMetaObject>

#include "kvscope/engine.h"

namespace kvscope::gui {
namespace {

// Token ids for synthetic prompts: above the control and byte tokens at the
// start of a vocabulary, below its rarest merges (as kvscope-cli's workloads).
std::vector<int32_t> seeded_ids(std::mt19937_64& rng, int n, int32_t vocab_size) {
  int32_t lo = vocab_size >= 1024 ? vocab_size / 64 + 256 : std::min(4, vocab_size - 1);
  int32_t hi = vocab_size >= 1024 ? vocab_size - vocab_size / 8 : vocab_size;
  std::uniform_int_distribution<int32_t> dist(lo, std::max(lo, hi - 1));
  std::vector<int32_t> ids(static_cast<size_t>(std::max(n, 0)));
  for (int32_t& id : ids) id = dist(rng);
  return ids;
}

}  // namespace

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) {
  ui::registerEngineMetaTypes();
}

EngineWorker::~EngineWorker() = default;

void EngineWorker::loadModel(const kvscope::EngineConfig& config) {
  if (stop_.load()) return;
  // The old engine's requests end with it.
  for (RequestId id : chat_requests_) emit finished(id, ui::FinishInfo{FinishReason::Cancelled, {}, {}});
  chat_requests_.clear();
  pending_text_.clear();
  pending_finish_.clear();
  pending_workload_.clear();
  engine_.reset();

  EngineConfig cfg = config;
  cfg.record_snapshots = false;  // we ask for one when it is due (~20 Hz)
  if (Status valid = cfg.validate(); !valid.ok()) {
    emit loadFailed(QString::fromStdString(valid.error()));
    return;
  }
  auto created = Engine::create(cfg);
  if (!created.ok()) {
    emit loadFailed(QString::fromStdString(created.error()));
    return;
  }
  engine_ = std::move(created).value();
  emit modelLoaded(engine_->model_info());
  publishSnapshot();
}

void EngineWorker::submitChat(const kvscope::ui::ChatHistory& messages, const kvscope::SamplingParams& sampling) {
  if (stop_.load()) return;
  if (!engine_) {
    emit error(tr("No model is loaded."));
    return;
  }
  GenerationRequest request;
  request.messages = messages;
  request.sampling = sampling;
  request.on_event = [this](const TokenEvent& ev) { onTokenEvent(ev); };
  auto id = engine_->submit(std::move(request));
  if (!id.ok()) {
    emit error(QString::fromStdString(id.error()));
    return;
  }
  chat_requests_.insert(*id);
  emit requestStarted(*id, true);
  scheduleStep();
}

void EngineWorker::cancel(quint64 request_id) {
  if (engine_) engine_->cancel(request_id);
  scheduleStep();
}

void EngineWorker::startWorkload(const kvscope::ui::WorkloadSpec& spec) {
  if (stop_.load()) return;
  if (!engine_) {
    emit error(tr("No model is loaded."));
    return;
  }
  const int32_t vocab = engine_->model_info().vocab_size;
  std::mt19937_64 rng(0x6b7673636f7065ull + engine_->last_step_stats().step);
  const int prefix_len = std::clamp(spec.shared_prefix_len, 0, spec.prompt_len);
  const std::vector<int32_t> prefix = seeded_ids(rng, prefix_len, vocab);
  pending_workload_.clear();
  num_workload_requests_ = spec.num_requests;
  for (int i = 0; i < spec.num_requests; ++i) {
    GenerationRequest request;
    request.prompt_tokens = prefix;
    const std::vector<int32_t> suffix = seeded_ids(rng, std::max(1, spec.prompt_len - prefix_len), vocab);
    request.prompt_tokens.insert(request.prompt_tokens.end(), suffix.begin(), suffix.end());
    request.sampling.temperature = 0.0f;
    request.sampling.ignore_eos = true;
    request.sampling.max_tokens = std::max(1, spec.output_len);
    request.on_event = [this](const TokenEvent& ev) { onTokenEvent(ev); };
    pending_workload_.push_back(std::move(request));
  }
  std::reverse(pending_workload_.begin(), pending_workload_.end());  // the leader is taken from the back
  if (!pending_workload_.empty()) {
    GenerationRequest leader = std::move(pending_workload_.back());
    pending_workload_.pop_back();
    auto id = engine_->submit(std::move(leader));
    if (!id.ok()) {
      pending_workload_.clear();
      emit error(tr("Workload request 1 of %1: %2").arg(spec.num_requests).arg(QString::fromStdString(id.error())));
      return;
    }
    emit requestStarted(*id, false);
  }
  scheduleStep();
}

void EngineWorker::submitPendingWorkload() {
  while (!pending_workload_.empty()) {
    GenerationRequest request = std::move(pending_workload_.back());
    pending_workload_.pop_back();
    auto id = engine_->submit(std::move(request));
    if (!id.ok()) {
      const int failed = num_workload_requests_ - static_cast<int>(pending_workload_.size());
      emit error(tr("Workload request %1 of %2: %3")
                     .arg(failed)
                     .arg(num_workload_requests_)
                     .arg(QString::fromStdString(id.error())));
      pending_workload_.clear();
      break;
    }
    emit requestStarted(*id, false);
  }
}

void EngineWorker::onTokenEvent(const kvscope::TokenEvent& ev) {
  if (ev.index != 0) return;
  if (chat_requests_.count(ev.id) && !ev.text.empty()) pending_text_[ev.id] += ev.text;
  if (ev.finish != FinishReason::None) {
    pending_finish_[ev.id] = ui::FinishInfo{ev.finish, ev.stats, ev.error};
    chat_requests_.erase(ev.id);
  }
}

void EngineWorker::scheduleStep() {
  if (step_posted_ || stop_.load()) return;
  step_posted_ = true;
  QMetaObject::invokeMethod(this, &EngineWorker::runStep, Qt::QueuedConnection);
}

void EngineWorker::runStep() {
  step_posted_ = false;
  if (stop_.load() || !engine_) return;
  if (!engine_->has_work()) {
    flushTokens();
    publishSnapshot();
    emit idle();
    return;
  }
  engine_->step();
  if (!pending_workload_.empty()) submitPendingWorkload();
  if (!since_flush_.isValid() || since_flush_.elapsed() >= kTokenFlushMs || !pending_finish_.empty()) flushTokens();
  if (!since_snapshot_.isValid() || since_snapshot_.elapsed() >= kSnapshotIntervalMs) publishSnapshot();
  scheduleStep();  // also when idle now: the next turn flushes and says so
}

void EngineWorker::flushTokens() {
  since_flush_.start();
  for (auto& [id, text] : pending_text_) {
    if (!text.empty()) emit tokens(id, QString::fromStdString(text));
  }
  pending_text_.clear();
  for (const auto& [id, info] : pending_finish_) emit finished(id, info);
  pending_finish_.clear();
}

void EngineWorker::publishSnapshot() {
  if (!engine_) return;
  since_snapshot_.start();
  emit snapshot(engine_->snapshot());
}

}  // namespace kvscope::gui
