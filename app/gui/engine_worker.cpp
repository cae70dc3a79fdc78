// EngineWorker: one engine step per event-loop turn (see engine_worker.h).
#include "engine_worker.h"

#include <algorithm>
#include <random>

#include <QMetaObject>
#include <QTimer>

#include "kvscope/engine.h"
#include "kvscope/setting_table.h"
#include "models/workload_prompts.h"

namespace kvscope::gui {

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) {
  ui::registerEngineMetaTypes();
  qRegisterMetaType<ui::TokenBytesTable>();
}

EngineWorker::~EngineWorker() = default;

void EngineWorker::requestStop() {
  std::lock_guard lock(engine_mutex_);
  stop_.store(true);
  if (engine_) engine_->interrupt();
}

bool EngineWorker::withEngine(const std::function<void(kvscope::Engine&)>& fn) {
  std::lock_guard lock(engine_mutex_);
  if (!engine_ || stop_.load()) return false;
  fn(*engine_);
  return true;
}

void EngineWorker::wake() {
  QMetaObject::invokeMethod(this, [this] { scheduleStep(); }, Qt::QueuedConnection);
}

void EngineWorker::loadModel(const kvscope::EngineConfig& config, bool may_reload) {
  if (stop_.load()) return;
  // Only a setting whose table row says Reload needs the weights again.
  const bool in_place = engine_ && !kvscope::needs_reload(engine_->config(), config);
  if (!in_place && !may_reload) {
    emit error(tr("The settings were not applied: they need the model loaded again, and the engine was expected "
                  "to stay. Apply them again."));
    return;
  }
  if (in_place) {
    EngineConfig cfg = config;
    cfg.record_snapshots = false;
    const bool step_settings_only = kvscope::applies_in_place(engine_->requested_config(), cfg);
    if (Status applied = engine_->reconfigure(cfg); !applied.ok()) {
      // Engine::reconfigure changes nothing when it fails: say that the
      // engine runs on as it was (a draft model that cannot be loaded, say).
      emit error(tr("The settings were not applied; the engine runs on with the ones it had.\n\n%1")
                     .arg(QString::fromStdString(applied.error())));
      return;
    }
    emit reconfigured(engine_->model_info(), step_settings_only);
    publishSnapshot();
    scheduleStep();  // re-queued requests continue
    return;
  }
  EngineConfig cfg = config;
  cfg.record_snapshots = false;  // we ask for one when it is due (~20 Hz)
  if (Status valid = problems_status(cfg.validate()); !valid.ok()) {
    emit loadFailed(QString::fromStdString(valid.error()), engine_ != nullptr);
    return;
  }
  // Progress in whole percent (a few dozen signals, not one per tensor);
  // closing the window (stop_) cancels the load at its next report.
  int last_percent = -1;
  auto progress = [this, &last_percent](double fraction, std::string_view stage) {
    const int percent = static_cast<int>(fraction * 100.0);
    if (percent != last_percent) {
      last_percent = percent;
      emit loadProgress(fraction, QString::fromUtf8(stage.data(), static_cast<qsizetype>(stage.size())));
    }
    return !stop_.load();
  };
  // The new engine is built before the old one goes: a file that turns out
  // to be bad leaves the loaded model (and its conversation) working.
  auto created = Engine::create(cfg, progress);
  if (!created.ok()) {
    if (!stop_.load()) emit loadFailed(QString::fromStdString(created.error()), engine_ != nullptr);
    scheduleStep();  // the old engine's requests go on
    return;
  }
  // The old engine's requests end with it: cancelled there, so that each
  // chat reply finishes with its real stats (tokens, times), as after Stop,
  // and the text not yet sent goes out first. The cancels are taken at the
  // start of a step.
  if (engine_ && !chat_requests_.empty()) {
    for (const auto& request : chat_requests_) engine_->cancel(request.first);
    engine_->step();
    flushTokens();
  }
  for (const auto& [id, running] : chat_requests_) {  // none, unless the old engine could not say
    for (int i = 0; i < running; ++i) emit finished(id, ui::FinishInfo{i, FinishReason::Cancelled, {}, {}});
  }
  chat_requests_.clear();
  pending_text_.clear();
  pending_finish_.clear();
  pending_workload_.clear();
  workload_ids_.clear();
  updateWorkloadActive();
  std::unique_ptr<Engine> old;  // destroyed after the lock: that joins its threads
  {
    std::lock_guard lock(engine_mutex_);
    old = std::move(engine_);
    engine_ = std::move(created).value();
    if (stop_.load()) engine_->interrupt();  // stopped while it loaded
  }
  old.reset();
  engine_->set_tracing(tracing_);
  publishTokenBytes();
  emit modelLoaded(engine_->model_info());
  publishSnapshot();
}

void EngineWorker::publishTokenBytes() {
  // Built once per model (a few MB for a 150k vocabulary, milliseconds) and
  // shared read-only: the snapshots that follow carry only ids. Ids past the
  // tokenizer's vocabulary (padding rows of the embedding) give "".
  auto table = std::make_shared<std::vector<std::string>>(static_cast<size_t>(engine_->model_info().vocab_size));
  for (size_t id = 0; id < table->size(); ++id) {
    (*table)[id] = engine_->token_bytes(static_cast<int32_t>(id), /*render_special=*/true);
  }
  emit tokenBytesLoaded(ui::TokenBytesTable(std::move(table)));
}

void EngineWorker::submitChat(const kvscope::ui::ChatHistory& messages, const kvscope::SamplingParams& sampling,
                              int n) {
  if (stop_.load()) return;
  if (!engine_) {
    emit error(tr("No model is loaded."));
    return;
  }
  GenerationRequest request;
  request.messages = messages;
  request.sampling = sampling;
  request.n = n;
  request.on_event = [this](const TokenEvent& ev) { onTokenEvent(ev); };
  // The engine renders the chat template, adds BOS and tokenises.
  SubmittedPrompt submitted;
  auto id = engine_->submit(std::move(request), &submitted);
  if (!id.ok()) {
    emit error(QString::fromStdString(id.error()));
    return;
  }
  for (const std::string& w : submitted.warnings) emit warning(QString::fromStdString(w));
  chat_requests_[*id] = n;
  emit requestStarted(*id, true);
  scheduleStep();
}

void EngineWorker::setTracing(bool on) {
  tracing_ = on;
  if (!engine_) return;
  if (!on) publishEvents();  // what was recorded up to now
  engine_->set_tracing(on);
}

void EngineWorker::publishEvents() {
  if (!engine_) return;
  ui::EventBatch events = engine_->take_events();
  if (!events.empty()) emit traceEvents(events);
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
  const uint64_t seed = 0x6b7673636f7065ull + engine_->last_step_stats().step;
  std::vector<std::vector<int32_t>> prompts = ui::workloadPrompts(spec, engine_->model_info().vocab_size, seed);
  std::mt19937_64 rng(seed + 1);
  pending_workload_.clear();
  workload_leader_ready_ = false;
  num_workload_requests_ = spec.num_requests;
  // Arrival times: the first request at once, the others after exponential
  // gaps (a Poisson process at the given rate), or all right after it.
  std::exponential_distribution<double> gap(spec.arrival_rate_per_s > 0.0 ? spec.arrival_rate_per_s : 1.0);
  double due_s = 0.0;
  std::vector<qint64> due_ms;
  for (int i = 0; i < spec.num_requests; ++i) {
    if (i > 0 && spec.arrival_rate_per_s > 0.0) due_s += gap(rng);
    due_ms.push_back(static_cast<qint64>(due_s * 1000.0));
    GenerationRequest request;
    request.prompt_tokens = std::move(prompts[static_cast<size_t>(i)]);
    request.sampling.temperature = 0.0f;
    request.sampling.ignore_eos = true;
    request.sampling.max_tokens = std::max(1, spec.output_len);
    request.on_event = [this](const TokenEvent& ev) { onTokenEvent(ev); };
    pending_workload_.push_back({due_ms.back(), std::move(request)});
  }
  std::reverse(pending_workload_.begin(), pending_workload_.end());  // the next one is taken from the back
  workload_clock_.start();
  if (!pending_workload_.empty()) {
    GenerationRequest leader = std::move(pending_workload_.back().request);
    pending_workload_.pop_back();
    auto id = engine_->submit(std::move(leader));
    if (!id.ok()) {
      pending_workload_.clear();
      updateWorkloadActive();
      emit error(tr("Workload request 1 of %1: %2").arg(spec.num_requests).arg(QString::fromStdString(id.error())));
      return;
    }
    workload_ids_.insert(*id);
    workload_leader_ = *id;
    emit requestStarted(*id, false);
  }
  updateWorkloadActive();
  scheduleStep();
}

void EngineWorker::updateWorkloadActive() {
  const bool active = !pending_workload_.empty() || !workload_ids_.empty();
  if (active == workload_active_) return;
  workload_active_ = active;
  emit workloadActive(active);
}

void EngineWorker::stopWorkload() {
  pending_workload_.clear();
  if (engine_) {
    for (RequestId id : workload_ids_) engine_->cancel(id);
  }
  updateWorkloadActive();  // inactive now if nothing had arrived yet; else once the cancelled ones end
  scheduleStep();
}

void EngineWorker::submitPendingWorkload() {
  // The others wait for the leader's first token: its whole prompt is then
  // computed and its full blocks hashed, however many steps a long shared
  // prefix takes to prefill in chunks. (An engine with nothing to do cannot
  // be waiting for the leader: it ended or was cancelled.)
  if (!workload_leader_ready_ && engine_->has_work()) return;
  while (!pending_workload_.empty() && pending_workload_.back().due_ms <= workload_clock_.elapsed()) {
    GenerationRequest request = std::move(pending_workload_.back().request);
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
    workload_ids_.insert(*id);
    emit requestStarted(*id, false);
  }
  updateWorkloadActive();
}

void EngineWorker::onTokenEvent(const kvscope::TokenEvent& ev) {
  if (ev.id == workload_leader_) workload_leader_ready_ = true;
  auto chat = chat_requests_.find(ev.id);
  if (chat != chat_requests_.end() && !ev.text.empty()) {
    // Whole UTF-8 characters per event, so each converts on its own.
    PendingText& pending = pending_text_[{ev.id, ev.index}];
    const QString text = QString::fromStdString(ev.text);
    const int begin = static_cast<int>(pending.text.size());
    pending.text += text;
    if (ev.from_draft) {
      ui::TextSpans& spans = pending.from_draft;
      if (!spans.empty() && spans.back().begin + spans.back().length == begin) {
        spans.back().length += static_cast<int>(text.size());
      } else {
        spans.push_back({begin, static_cast<int>(text.size())});
      }
    }
  }
  if (ev.finish == FinishReason::None) return;
  // Workload requests report their first completion's end only (they have one).
  if (chat == chat_requests_.end() && ev.index != 0) return;
  if (chat == chat_requests_.end()) {
    workload_ids_.erase(ev.id);
    updateWorkloadActive();
  }
  pending_finish_.emplace_back(ev.id, ui::FinishInfo{ev.index, ev.finish, ev.stats, ev.error});
  if (chat != chat_requests_.end() && --chat->second <= 0) chat_requests_.erase(chat);
}

void EngineWorker::scheduleStep() {
  if (step_posted_ || stop_.load()) return;
  step_posted_ = true;
  QMetaObject::invokeMethod(this, &EngineWorker::runStep, Qt::QueuedConnection);
}

void EngineWorker::runStep() {
  step_posted_ = false;
  if (stop_.load() || !engine_) return;
  if (!engine_->has_work() && !pending_workload_.empty()) {
    submitPendingWorkload();
    if (!engine_->has_work()) {
      // Nothing runs until the next arrival: sleep until then.
      const qint64 wait = std::max<qint64>(1, pending_workload_.back().due_ms - workload_clock_.elapsed());
      flushTokens();
      publishSnapshot();
      step_posted_ = true;
      QTimer::singleShot(static_cast<int>(std::min<qint64>(wait, 1000)), this, &EngineWorker::runStep);
      return;
    }
  }
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
  for (auto& [key, pending] : pending_text_) {
    if (!pending.text.isEmpty()) emit tokens(key.first, key.second, pending.text, pending.from_draft);
  }
  pending_text_.clear();
  for (const auto& [id, info] : pending_finish_) emit finished(id, info);
  pending_finish_.clear();
}

void EngineWorker::publishSnapshot() {
  if (!engine_) return;
  since_snapshot_.start();
  emit snapshot(engine_->snapshot());
  if (tracing_) publishEvents();
}

}  // namespace kvscope::gui
