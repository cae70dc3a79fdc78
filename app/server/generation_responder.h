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
//
// An HTTP/1.0 client gets no chunked coding (RFC 9112 6.1: a server must not
// send it to one): its response, streamed events or JSON, is made whole on
// the connection's thread and sent with a Content-Length (BodyFraming::kWhole).
// A body ended by closing the connection would do for a 1.0 client that
// closes, but httplib 0.11 keeps the connection of one that sent
// "Connection: Keep-Alive" open, so such a client would wait for the end.
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

// How the body reaches the client: written as it is made, in chunks
// (HTTP/1.1), or whole with a Content-Length once complete (HTTP/1.0).
enum class BodyFraming { kChunked, kWhole };

// `registry` must outlive the response (the server owns it).
// On an engine refusal (e.g. a prompt longer than the context) `res` gets the
// 400 error instead.
void respond_generation(EngineDriver& driver, const ParsedRequest& request, const ResponseContext& context,
                        JobRegistry& registry, const std::shared_ptr<ServerMetrics>& metrics, BodyFraming framing,
                        httplib::Response& res);

}  // namespace kvscope::server
