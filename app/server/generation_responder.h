// Answers one parsed /v1/chat/completions or /v1/completions request on an
// httplib response: starts a GenerationJob, then either streams server-sent
// events from httplib's chunked content provider, on the connection's own
// thread (one chunk per new piece of text, a finishing chunk per choice, the
// usage chunk with stream_options.include_usage, `data: [DONE]`), or holds
// the response in the handler until every choice has finished and sends it
// whole with its status: 200 with the JSON, or the error's status (500 for an
// engine failure, 503 server_stopping when the server stops meanwhile), so
// OpenAI's clients raise it as they would OpenAI's.
//
// While it waits for tokens it checks on the client every kPollInterval: a
// client that has gone (a write failed, or, for a held response,
// `client_present` says so: the socket was closed) gets its requests
// cancelled at once, which frees their KV blocks at the engine's next step.
//
// An HTTP/1.0 client gets no chunked coding (RFC 9112 6.1: a server must not
// send it to one): its stream, too, is held and sent whole with a
// Content-Length (BodyFraming::kWhole). A body ended by closing the
// connection would do for a 1.0 client that closes, but httplib 0.11 keeps
// the connection of one that sent "Connection: Keep-Alive" open, so such a
// client would wait for the end.
#pragma once

#include <chrono>
#include <functional>

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

// How a stream reaches the client: written as it is made, in chunks
// (HTTP/1.1), or whole with a Content-Length once complete (HTTP/1.0).
// Non-streamed responses are always whole.
enum class BodyFraming { kChunked, kWhole };

// `registry` must outlive the response (the server owns it).
// `client_present`: whether the client is still connected (for held
// responses; called on the handler's thread).
// On an engine refusal (e.g. a prompt longer than the context) `res` gets the
// 400 error instead.
void respond_generation(EngineDriver& driver, const ParsedRequest& request, const ResponseContext& context,
                        JobRegistry& registry, const std::shared_ptr<ServerMetrics>& metrics, BodyFraming framing,
                        const std::function<bool()>& client_present, httplib::Response& res);

}  // namespace kvscope::server
