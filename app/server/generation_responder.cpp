// Streaming and non-streaming answers to generation requests (see
// generation_responder.h).
#include "generation_responder.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <httplib.h>

#include "kvscope/tool_calls.h"

namespace kvscope::server {
namespace {

// What one response has sent and collected so far; owned by the provider and
// the releaser, both run on the connection's thread.
struct ResponseState {
  std::shared_ptr<GenerationJob> job;
  ResponseContext ctx;
  bool include_usage = false;
  int32_t n = 1;
  std::vector<std::string> echo;       // [num prompts] with echo: the prompt text
  std::vector<char> echo_pending;      // [num choices] streamed echo with logprobs: not sent yet
  std::vector<ChoiceResult> choices;   // [num choices]
  std::vector<size_t> echo_chars;      // [num choices] characters of the echoed prompt before the completion
  // Chat with tools offered: how the model writes a call, and how much of
  // each choice's text has gone out as content (the rest may be a call).
  ToolCallFormat tool_format = ToolCallFormat::None;
  std::vector<size_t> content_sent;  // [num choices]
  int32_t num_finished = 0;
  bool started = false;
  std::string error;  // the first engine error

  bool all_finished() const { return num_finished == static_cast<int32_t>(choices.size()); }

  Usage usage() const {
    Usage u;
    for (const auto& p : job->prompt_tokens()) u.prompt_tokens += static_cast<int64_t>(p.size());
    for (size_t i = 0; i < choices.size(); ++i) {
      u.completion_tokens += choices[i].stats.num_generated_tokens;
      // The completions of one prompt share its cached prefix: count it once.
      if (i % static_cast<size_t>(n) == 0) u.cached_prompt_tokens += choices[i].stats.num_cached_prompt_tokens;
    }
    return u;
  }

  // The events that arrived within `timeout`, their logprob entries placed
  // in their choice's text (after the echoed prompt).
  std::vector<ChoiceEvent> take_events(std::chrono::milliseconds timeout) {
    std::vector<ChoiceEvent> events = job->wait_events(timeout);
    for (ChoiceEvent& ev : events) {
      if (ev.logprob) ev.logprob->text_offset += static_cast<int64_t>(echo_chars[static_cast<size_t>(ev.choice)]);
    }
    return events;
  }

  // Records `ev` in its choice; true when it finished the choice.
  bool record(ChoiceEvent& ev) {
    ChoiceResult& c = choices[static_cast<size_t>(ev.choice)];
    c.text += ev.text;
    if (ev.logprob) c.logprobs.push_back(*ev.logprob);
    if (ev.finish == FinishReason::None) return false;
    c.finish = ev.finish;
    c.stats = ev.stats;
    if (ev.finish == FinishReason::Error && error.empty()) error = ev.error.empty() ? "generation failed" : ev.error;
    // A client still here was not the one that cancelled: the server is stopping.
    if (ev.finish == FinishReason::Cancelled && error.empty()) error = "the request was cancelled: the server is stopping";
    ++num_finished;
    return true;
  }
};

// A tool call id: 9 letters and digits, the form Mistral's templates insist
// on when the id comes back in a tool turn (any client takes it).
std::string new_tool_call_id() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string id(9, ' ');
  for (char& ch : id) ch = kAlphabet[pick(rng)];
  return id;
}

// Splits a finished choice's text into its content and tool calls (ids
// named here); false when the reply made no call.
bool take_tool_calls(ToolCallFormat format, ChoiceResult& c) {
  ParsedReply parsed = parse_tool_calls(format, c.text);
  if (parsed.tool_calls.empty()) return false;
  for (ToolCall& call : parsed.tool_calls) call.id = new_tool_call_id();
  c.tool_calls = std::move(parsed.tool_calls);
  c.text = std::move(parsed.content);
  return true;
}

// Completions with echo and logprobs: the entries of choice i's prompt, each
// placed in the echoed text. A token the engine added (BOS, first) is not in
// it and takes no room; SentencePiece's dummy-prefix space before the first
// word is not in it either.
std::vector<TokenLogprob> echoed_prompt_logprobs(ResponseState& s, size_t i) {
  const size_t prompt = i / static_cast<size_t>(s.n);
  std::vector<TokenLogprob> lps = s.job->prompt_logprobs(static_cast<int32_t>(prompt));
  const std::string& text = s.echo[prompt];
  size_t offset = 0;       // in bytes, to compare with the text
  size_t counted = 0;      // bytes of the text whose characters `chars` counts
  size_t chars = 0;        // characters before min(offset, text size): the entry's text_offset
  for (size_t k = 0; k < lps.size(); ++k) {
    const std::string& bytes = lps[k].bytes;
    const size_t at = std::min(offset, text.size());
    chars += utf8_chars_started(std::string_view(text).substr(counted, at - counted));  // only the new bytes
    counted = at;
    lps[k].text_offset = static_cast<int64_t>(chars);
    if (offset <= text.size() && text.compare(offset, bytes.size(), bytes) == 0) {
      offset += bytes.size();
    } else if (offset == 0 && !bytes.empty() && bytes[0] == ' ' && text.compare(0, bytes.size() - 1, bytes, 1) == 0) {
      offset += bytes.size() - 1;
    } else if (k > 0) {
      offset += bytes.size();  // the text differs (bytes it could not hold were replaced): keep counting
    }
  }
  return lps;
}

// The prompt as text, for echo: the text given, or token ids' bytes.
std::string echo_text(EngineDriver& driver, const ParsedPrompt& p) {
  if (!p.is_tokens) return p.text;
  std::string text;
  for (int32_t t : p.tokens) text += driver.engine().token_bytes(t, /*render_special=*/true);
  return text;
}

bool write(httplib::DataSink& sink, const std::string& text) {
  return text.empty() || sink.write(text.data(), text.size());
}

// One event of a streamed chat reply with tools offered: text that may
// become a call is held back (kvscope/tool_calls.h, streamable_prefix) until
// the reply ends; then its calls go out as delta.tool_calls, or the held
// text as content.
void stream_tool_event(ResponseState& s, ChoiceEvent& ev, std::string& out) {
  const auto i = static_cast<size_t>(ev.choice);
  std::vector<TokenLogprob> logprobs;
  if (ev.logprob) logprobs.push_back(*ev.logprob);
  const bool finished = s.record(ev);
  ChoiceResult& c = s.choices[i];
  size_t& sent = s.content_sent[i];
  const bool finished_well = finished && !finish_reason_json(ev.finish).is_null();
  if (finished_well && take_tool_calls(s.tool_format, c)) {
    if (!logprobs.empty()) {
      out += sse_event(stream_chunk(s.ctx, ev.choice, "", std::nullopt, logprobs, FinishReason::None, s.include_usage));
    }
    for (const auto& chunk : tool_call_chunks(s.ctx, ev.choice, c.tool_calls, s.include_usage)) out += sse_event(chunk);
    return;
  }
  const size_t ready = finished ? c.text.size() : streamable_prefix(s.tool_format, c.text);
  const std::string piece = ready > sent ? c.text.substr(sent, ready - sent) : std::string();
  sent = std::max(sent, ready);
  if (!piece.empty() || !logprobs.empty()) {
    out += sse_event(stream_chunk(s.ctx, ev.choice, piece, std::nullopt, logprobs, FinishReason::None, s.include_usage));
  }
  if (finished_well) out += sse_event(stream_chunk(s.ctx, ev.choice, "", std::nullopt, {}, ev.finish, s.include_usage));
}

// One call of the streaming provider: whatever arrived within kPollInterval
// as SSE chunks. False ends the response (the client is gone).
bool stream_step(ResponseState& s, httplib::DataSink& sink) {
  std::string out;
  const bool chat = s.ctx.endpoint == Endpoint::kChatCompletions;
  if (!s.started) {
    s.started = true;
    for (size_t i = 0; i < s.choices.size(); ++i) {
      if (chat) {
        out += sse_event(stream_chunk(s.ctx, static_cast<int32_t>(i), "", "assistant", {}, FinishReason::None,
                                      s.include_usage));
      } else if (!s.echo.empty() && s.ctx.logprobs) {
        // With its tokens' entries, which exist once the prompt has run.
        s.echo_pending[i] = 1;
      } else if (!s.echo.empty()) {
        const std::string& prompt = s.echo[i / static_cast<size_t>(s.n)];
        out += sse_event(stream_chunk(s.ctx, static_cast<int32_t>(i), prompt, std::nullopt, {}, FinishReason::None,
                                      s.include_usage));
      }
    }
  }
  for (ChoiceEvent& ev : s.take_events(kPollInterval)) {
    if (s.tool_format != ToolCallFormat::None) {
      stream_tool_event(s, ev, out);
      continue;
    }
    const auto i = static_cast<size_t>(ev.choice);
    if (s.echo_pending[i]) {
      s.echo_pending[i] = 0;
      const std::string& prompt = s.echo[i / static_cast<size_t>(s.n)];
      out += sse_event(stream_chunk(s.ctx, ev.choice, prompt, std::nullopt, echoed_prompt_logprobs(s, i),
                                    FinishReason::None, s.include_usage));
    }
    std::vector<TokenLogprob> logprobs;
    if (ev.logprob) logprobs.push_back(*ev.logprob);
    if (!ev.text.empty() || !logprobs.empty()) {
      out += sse_event(stream_chunk(s.ctx, ev.choice, ev.text, std::nullopt, logprobs, FinishReason::None,
                                    s.include_usage));
    }
    if (s.record(ev) && !finish_reason_json(ev.finish).is_null()) {
      out += sse_event(stream_chunk(s.ctx, ev.choice, "", std::nullopt, {}, ev.finish, s.include_usage));
    }
  }
  const bool done = s.all_finished();
  if (done) {
    if (!s.error.empty()) {
      out += sse_event(engine_error(s.error).to_json());
    } else if (s.include_usage) {
      out += sse_event(usage_chunk(s.ctx, s.usage()));
    }
    out += kSseDone;
  }
  if (out.empty() ? !sink.is_writable() : !write(sink, out)) return false;
  if (done) sink.done();
  return true;
}

// One call of the non-streaming provider: collects, and writes the whole
// response once every choice has finished.
bool collect_step(ResponseState& s, httplib::DataSink& sink) {
  for (ChoiceEvent& ev : s.take_events(kPollInterval)) s.record(ev);
  if (!s.all_finished()) return sink.is_writable();
  std::string body;
  if (!s.error.empty()) {
    body = engine_error(s.error).body();
  } else {
    if (s.tool_format != ToolCallFormat::None) {
      for (ChoiceResult& c : s.choices) take_tool_calls(s.tool_format, c);
    }
    if (!s.echo.empty()) {
      for (size_t i = 0; i < s.choices.size(); ++i) {
        const std::string& prompt = s.echo[i / static_cast<size_t>(s.n)];
        ChoiceResult& c = s.choices[i];
        c.text.insert(0, prompt);
        if (s.ctx.logprobs) {
          std::vector<TokenLogprob> prompt_entries = echoed_prompt_logprobs(s, i);
          c.logprobs.insert(c.logprobs.begin(), prompt_entries.begin(), prompt_entries.end());
        }
      }
    }
    body = dump(full_response(s.ctx, s.choices, s.usage()));
  }
  if (!write(sink, body)) return false;
  sink.done();
  return true;
}

}  // namespace

void respond_generation(EngineDriver& driver, const ParsedRequest& request, const ResponseContext& context,
                        JobRegistry& registry, const std::shared_ptr<ServerMetrics>& metrics, BodyFraming framing,
                        const std::function<bool()>& client_present, httplib::Response& res) {
  // Stopping: refused before anything is submitted (and counted). A request
  // that passes here as the stop begins is caught by registry.add below.
  if (registry.closed()) {
    const ApiError e = server_stopping();
    res.status = e.status;
    res.set_content(e.body(), "application/json");
    return;
  }
  GenerationJob::Start started = GenerationJob::start(driver, request, metrics);
  if (const ApiError* e = std::get_if<ApiError>(&started)) {
    res.status = e->status;
    res.set_content(e->body(), "application/json");
    return;
  }
  auto state = std::make_shared<ResponseState>();
  state->job = std::get<std::shared_ptr<GenerationJob>>(std::move(started));
  if (!registry.add(state->job)) {
    state->job->cancel();
    const ApiError e = server_stopping();
    res.status = e.status;
    res.set_content(e.body(), "application/json");
    return;
  }
  state->ctx = context;
  state->include_usage = request.include_usage;
  state->n = request.n;
  state->choices.resize(static_cast<size_t>(state->job->num_choices()));
  state->echo_chars.assign(state->choices.size(), 0);
  // The request was refused above unless the model's template offers tools.
  if (!request.tools_json.empty() && request.tool_calls_allowed) state->tool_format = driver.engine().tool_call_format();
  state->content_sent.assign(state->choices.size(), 0);
  state->echo_pending.assign(state->choices.size(), 0);
  if (request.echo) {
    for (const ParsedPrompt& p : request.prompts) state->echo.push_back(echo_text(driver, p));
    for (size_t i = 0; i < state->choices.size(); ++i) {
      state->echo_chars[i] = utf8_chars_started(state->echo[i / static_cast<size_t>(state->n)]);
    }
  }
  int64_t num_prompt_tokens = 0;
  for (const auto& p : state->job->prompt_tokens()) num_prompt_tokens += static_cast<int64_t>(p.size());
  metrics->on_request_started(request.endpoint == Endpoint::kChatCompletions, num_prompt_tokens);

  // Runs when the response is destroyed, however it ended: a client that
  // left before every choice finished gets its requests cancelled here.
  auto release = [state, &registry, metrics](bool) {
    if (!state->all_finished()) state->job->cancel();
    registry.remove(state->job);
    metrics->on_request_ended();
  };
  if (request.stream && framing == BodyFraming::kChunked) {
    res.set_header("Cache-Control", "no-cache");
    // Exactly this content type: httplib compresses other text/* types, which would hold chunks back.
    res.set_chunked_content_provider(
        "text/event-stream", [state](size_t, httplib::DataSink& sink) { return stream_step(*state, sink); },
        release);
    return;
  }
  // Held: the same steps as a stream's, into one string, so that the status
  // line waits for the outcome (an engine failure or the server's stop is an
  // error status, which OpenAI's clients raise, not a 200 with an error
  // body). The client is asked after every poll whether it is still there.
  std::string body;
  bool complete = false;
  httplib::DataSink sink;
  sink.write = [&body](const char* data, size_t size) {
    body.append(data, size);
    return true;
  };
  sink.done = [&complete] { complete = true; };
  sink.is_writable = client_present;
  // Asked before every step too: a stream's step asks only when it has
  // nothing new to write, and a fast one always has.
  while (!complete && client_present() &&
         (request.stream ? stream_step(*state, sink) : collect_step(*state, sink))) {
  }
  if (!complete) {
    // The client has gone: its requests are cancelled and released now, and
    // nothing but a status line is written (nginx's 499, "client closed
    // request", for anyone reading a capture).
    release(false);
    res.status = 499;
    return;
  }
  res.status = 200;
  if (!request.stream && !state->error.empty()) {
    const ApiError e = registry.closed() ? server_stopping() : engine_error(state->error);
    res.status = e.status;
    body = e.body();
  }
  if (request.stream) res.set_header("Cache-Control", "no-cache");
  // Through a provider, so that the job is released (and the server's stop
  // waits for it) only once the body has been written, not before. (Never
  // empty: httplib 0.11 takes a provider of length 0 for one of unknown
  // length and calls it until it says done.)
  auto whole = std::make_shared<std::string>(std::move(body));
  res.set_content_provider(
      whole->size(), request.stream ? "text/event-stream" : "application/json",
      [whole](size_t offset, size_t length, httplib::DataSink& out) { return out.write(whole->data() + offset, length); },
      release);
}

}  // namespace kvscope::server
