// ApiError: an error as OpenAI's API reports it, with the HTTP status it goes
// out with. Every failure the server answers (bad JSON, a wrong key, an
// unknown model, an engine error) is one of these, so clients written for
// OpenAI (the `openai` Python package raises BadRequestError, NotFoundError,
// ...) read it as they read OpenAI's own:
//   HTTP 400  {"error": {"message": "...", "type": "invalid_request_error",
//                        "param": "messages", "code": null}}
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace kvscope::server {

struct ApiError {
  int status = 400;
  std::string message;                       // for a person: what is wrong and what to send instead
  std::string type = "invalid_request_error";
  std::string param;                         // the request field at fault; "" -> null
  std::string code;                          // a machine-readable code; "" -> null

  // {"error": {"message", "type", "param", "code"}}
  nlohmann::ordered_json to_json() const;
  std::string body() const;  // to_json() as text
};

// 400: a request the server cannot take as sent (`param` names the field).
ApiError invalid_request(std::string message, std::string param = {}, std::string code = {});
// 401: a missing or wrong API key.
ApiError invalid_api_key();
// 403: a browser page from an origin not in --allowed-origins.
ApiError origin_not_allowed(const std::string& origin);
// 404: a model the server does not serve.
ApiError model_not_found(const std::string& model);
// 404: no such endpoint.
ApiError route_not_found(const std::string& method, const std::string& path);
// 405: an endpoint that exists, asked with another method (`allowed`, e.g. "POST").
ApiError method_not_allowed(const std::string& method, const std::string& path, const std::string& allowed);
// 413: a body over the server's limit.
ApiError payload_too_large(size_t limit_bytes);
// A body whose size the server cannot check before reading it all: sent in
// chunks (411) or compressed (415, naming the encoding).
ApiError length_required();
// 411 too: a body method with neither Content-Length nor chunks.
ApiError length_missing();
// 400: a Content-Length that is not one decimal number (several that differ,
// or none readable): the body's end is unknown (RFC 9112 6.3).
ApiError bad_content_length(const std::string& value);
ApiError encoded_body_refused(const std::string& encoding);
// 413: a body sent as a form (Content-Type application/x-www-form-urlencoded,
// what curl -d sends unless told otherwise) over the HTTP library's own cap
// for forms, though within the server's limit: the fix is the content type.
ApiError form_too_large(size_t form_limit_bytes);
// 500: the engine failed while generating.
ApiError engine_error(std::string message);
// 503: a generation request that arrived while the server was stopping.
ApiError server_stopping();
// A generic error for `status` (httplib's own errors: 400 for a malformed
// request line, 405, 414, ...), with the status's reason phrase.
ApiError error_for_status(int status);

}  // namespace kvscope::server
