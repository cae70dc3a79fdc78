// Answers one parsed /v1/chat/completions or /v1/completions request on an
// httplib response: starts a GenerationJob, then, from httplib's chunked
// content provider (on the connection's own thread), either streams
// server-sent events (one chunk per new piece of text, a finishing chunk per
// choice, the usage chunk with stream_options.include_usage, `data: [DONE]`)
// or writes the whole JSON response once every choice has finished.
//
// While it waits for tokens it polls the connection every kPollInterval: a
// client that has gone (the socket closed, a write failed) gets its requests
// cancelled at once, which frees their KV blocks at the engine's next step.
// Non-streaming responses use the provider for the same reason, so the
// status line (200) goes out before generation ends; an engine failure after
// that is reported in the body as an OpenAI error object.
#pragma once

#include <chrono>

#include "engine_driver.h"
#include "generation_job.h"
#include "metrics.h"
#include "request_parser.h"
#include "response_json.h"

namespace httplib {
struct Response;
}

namespace kvscope::server {

inline constexpr std::chrono::milliseconds kPollInterval{100};

// `registry` must outlive the response (the server owns it).
// On an engine refusal (e.g. a prompt longer than the context) `res` gets the
// 400 error instead.
void respond_generation(EngineDriver& driver, const ParsedRequest& request, const ResponseContext& context,
                        JobRegistry& registry, const std::shared_ptr<ServerMetrics>& metrics, httplib::Response& res);

}  // namespace kvscope::server
