// One HTTP request's engine requests and their events (see generation_job.h).
#include "generation_job.h"

#include <cmath>

#include "kvscope/tool_calls.h"

namespace kvscope::server {

GenerationJob::GenerationJob(EngineDriver& driver, int32_t num_choices, int32_t top_logprobs, bool logprobs,
                             std::shared_ptr<JobCounters> counters)
    : driver_(driver), num_choices_(num_choices), top_logprobs_(top_logprobs), logprobs_(logprobs),
      counters_(std::move(counters)) {
  if (logprobs_) rows_.resize(static_cast<size_t>(num_choices));
  num_counted_.assign(static_cast<size_t>(num_choices), 0);
}

GenerationJob::~GenerationJob() = default;

namespace {

// The request field a refusal of Engine::submit is about, for the error's
// `param`: the one a client would change.
std::string refused_field(const std::string& error, bool chat) {
  if (error.find("lower max tokens") != std::string::npos) return "max_tokens";  // the pool holds the prompt
  if (error.find("max_seqs") != std::string::npos) return "n";  // more choices than sequences at once
  if (error.find("tools") != std::string::npos) return "tools";  // the chat template cannot offer them
  return chat ? "messages" : "prompt";
}

}  // namespace

GenerationJob::Start GenerationJob::start(EngineDriver& driver, const ParsedRequest& request,
                                          std::shared_ptr<JobCounters> counters) {
  const bool chat = request.endpoint == Endpoint::kChatCompletions;
  const int32_t num_prompts = chat ? 1 : static_cast<int32_t>(request.prompts.size());
  std::shared_ptr<GenerationJob> job(
      new GenerationJob(driver, num_prompts * request.n, request.top_logprobs, request.logprobs, counters));
  job->n_ = request.n;
  const bool score_prompts = !chat && request.echo && request.logprobs;
  if (score_prompts) job->scored_prompts_.resize(static_cast<size_t>(num_prompts));
  for (int32_t p = 0; p < num_prompts; ++p) {
    GenerationRequest r;
    if (chat) {
      r.messages = request.messages;
      // tool_choice none with a template that cannot show tools: nothing to
      // show, and no call to forbid.
      const bool shown = request.tool_calls_allowed || driver.engine().tool_call_format() != ToolCallFormat::None;
      if (shown) r.tools_json = request.tools_json;
    } else if (request.prompts[static_cast<size_t>(p)].is_tokens) {
      r.prompt_tokens = request.prompts[static_cast<size_t>(p)].tokens;
    } else {
      r.prompt = request.prompts[static_cast<size_t>(p)].text;
    }
    r.sampling = request.sampling;
    r.n = request.n;
    // The callbacks keep the job alive until the engine is done with them.
    r.on_event = [job, p](const TokenEvent& ev) { job->on_event(p, ev); };
    if (request.logprobs) {
      r.on_logits = [job, p](int32_t index, int32_t, const float* logits, int32_t vocab) {
        job->on_logits(p, index, logits, vocab);
      };
    }
    if (score_prompts) {
      r.on_prompt_logits = [job, p](int32_t, int32_t token, const float* logits, int32_t vocab) {
        job->on_prompt_logits(p, token, logits, vocab);
      };
    }
    SubmittedPrompt submitted;
    Result<RequestId> id = driver.submit(std::move(r), &submitted);
    if (!id.ok()) {
      job->cancel();
      const bool too_long = id.error().find("context holds") != std::string::npos ||
                            id.error().find("the prompt needs") != std::string::npos;
      return invalid_request(num_prompts > 1 ? "prompt[" + std::to_string(p) + "]: " + id.error() : id.error(),
                             refused_field(id.error(), chat), too_long ? "context_length_exceeded" : "");
    }
    std::lock_guard lock(job->mutex_);
    job->ids_.push_back(*id);
    job->prompt_tokens_.push_back(std::move(submitted.tokens));
    for (std::string& w : submitted.warnings) job->warnings_.push_back(std::move(w));
  }
  return job;
}

void GenerationJob::on_logits(int32_t prompt_index, int32_t completion, const float* logits, int32_t vocab) {
  LogitsRow& row = rows_[static_cast<size_t>(prompt_index * n_ + completion)];
  row.logits.assign(logits, logits + vocab);
  row.log_sum_exp = log_sum_exp(logits, vocab);
  row.fresh = true;
}

void GenerationJob::on_prompt_logits(int32_t prompt_index, int32_t token, const float* logits, int32_t vocab) {
  TokenLogprob lp = logprob_entry(logits, vocab, log_sum_exp(logits, vocab), token);
  std::lock_guard lock(mutex_);
  scored_prompts_[static_cast<size_t>(prompt_index)].push_back(std::move(lp));
}

std::vector<TokenLogprob> GenerationJob::prompt_logprobs(int32_t prompt) {
  std::vector<TokenLogprob> out;
  const std::vector<int32_t>& tokens = prompt_tokens_[static_cast<size_t>(prompt)];
  if (tokens.empty()) return out;
  TokenLogprob first;
  first.token = tokens.front();
  first.bytes = driver_.engine().token_bytes(first.token, /*render_special=*/true);
  first.scored = false;
  out.push_back(std::move(first));
  std::lock_guard lock(mutex_);
  if (static_cast<size_t>(prompt) < scored_prompts_.size()) {
    const auto& scored = scored_prompts_[static_cast<size_t>(prompt)];
    out.insert(out.end(), scored.begin(), scored.end());
  }
  return out;
}

TokenLogprob GenerationJob::logprob_entry(const float* logits, int32_t vocab, float lse, int32_t token) const {
  TokenLogprob lp;
  lp.token = token;
  lp.bytes = driver_.engine().token_bytes(token, /*render_special=*/true);
  if (token >= 0 && token < vocab) lp.logprob = logits[token] - lse;
  lp.top = top_logprobs(logits, vocab, lse, top_logprobs_);
  // With response_format json_object/json_schema the row is the constrained
  // one (forbidden tokens at -inf): they are not alternatives, so not listed.
  std::erase_if(lp.top, [](const TopLogprob& t) { return !std::isfinite(t.logprob); });
  for (const TopLogprob& t : lp.top) lp.top_bytes.push_back(driver_.engine().token_bytes(t.token, true));
  return lp;
}

TokenLogprob GenerationJob::make_logprob(LogitsRow& row, int32_t token) const {
  TokenLogprob lp =
      logprob_entry(row.logits.data(), static_cast<int32_t>(row.logits.size()), row.log_sum_exp, token);
  row.fresh = false;
  return lp;
}

void GenerationJob::on_event(int32_t prompt_index, const TokenEvent& ev) {
  ChoiceEvent out;
  out.choice = prompt_index * n_ + ev.index;
  out.token = ev.token;
  out.text = ev.text;
  out.finish = ev.finish;
  out.error = ev.error;
  out.stats = ev.stats;
  if (logprobs_ && ev.token >= 0) {
    LogitsRow& row = rows_[static_cast<size_t>(out.choice)];
    if (row.fresh) {
      out.logprob = make_logprob(row, ev.token);
      out.logprob->text_offset = ev.text_offset;  // in the completion; the responder adds an echo's length
    }
  }
  if (counters_) {
    int32_t& counted = num_counted_[static_cast<size_t>(out.choice)];
    if (ev.token >= 0) {
      counters_->on_token();
      ++counted;
    }
    if (ev.finish != FinishReason::None) {
      // The end-of-sequence token arrives without an event of its own but is
      // generated, and the usage counts it: so does the metric.
      for (; counted < ev.stats.num_generated_tokens; ++counted) counters_->on_token();
      counters_->on_finish(ev.finish, ev.stats);
    }
  }
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(out));
  }
  arrived_.notify_all();
}

std::vector<ChoiceEvent> GenerationJob::wait_events(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  arrived_.wait_for(lock, timeout, [this] { return !events_.empty(); });
  std::vector<ChoiceEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

void GenerationJob::cancel() {
  std::vector<RequestId> ids;
  {
    std::lock_guard lock(mutex_);
    if (cancelled_) return;
    cancelled_ = true;
    ids = ids_;
  }
  for (RequestId id : ids) driver_.cancel(id);
}

bool JobRegistry::add(const std::shared_ptr<GenerationJob>& job) {
  std::lock_guard lock(mutex_);
  if (closed_) return false;
  jobs_.push_back(job);
  return true;
}

void JobRegistry::remove(const std::shared_ptr<GenerationJob>& job) {
  {
    std::lock_guard lock(mutex_);
    std::erase(jobs_, job);
  }
  emptied_.notify_all();
}

bool JobRegistry::wait_empty(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return emptied_.wait_for(lock, timeout, [this] { return jobs_.empty(); });
}

void JobRegistry::close_and_cancel_all() {
  std::vector<std::shared_ptr<GenerationJob>> jobs;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    jobs = jobs_;
  }
  for (const auto& job : jobs) job->cancel();
}

bool JobRegistry::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

void JobRegistry::reopen() {
  std::lock_guard lock(mutex_);
  closed_ = false;
}

size_t JobRegistry::size() const {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

}  // namespace kvscope::server
