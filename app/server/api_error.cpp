// OpenAI-format errors (see api_error.h).
#include "api_error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvscope::server {
namespace {

nlohmann::ordered_json null_if_empty(const std::string& s) { return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s); }

}  // namespace

nlohmann::ordered_json ApiError::to_json() const {
  return {{"error",
           {{"message", message}, {"type", type}, {"param", null_if_empty(param)}, {"code", null_if_empty(code)}}}};
}

std::string ApiError::body() const {
  // A message may quote user input that is not valid UTF-8: replaced, never thrown on.
  return to_json().dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

ApiError invalid_request(std::string message, std::string param, std::string code) {
  return {400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

ApiError invalid_api_key() {
  return {401, "Incorrect or missing API key: send the key the server was started with as 'Authorization: Bearer KEY'",
          "invalid_request_error", "", "invalid_api_key"};
}

ApiError origin_not_allowed(const std::string& origin) {
  return {403,
          fmt::format("requests from origin '{}' are not allowed; start the server with --allowed-origins to let "
                      "browser pages use it",
                      origin),
          "permission_error", "", "origin_not_allowed"};
}

ApiError model_not_found(const std::string& model) {
  return {404,
          fmt::format("The model '{}' does not exist on this server; GET /v1/models lists the one it serves", model),
          "invalid_request_error", "model", "model_not_found"};
}

ApiError route_not_found(const std::string& method, const std::string& path) {
  return {404, fmt::format("no endpoint {} {}; see /v1/models, /v1/chat/completions, /v1/completions", method, path),
          "invalid_request_error", "", "unknown_url"};
}

ApiError method_not_allowed(const std::string& method, const std::string& path, const std::string& allowed) {
  return {405, fmt::format("{} {}: this endpoint takes {}", method, path, allowed), "invalid_request_error", "",
          "method_not_allowed"};
}

ApiError payload_too_large(size_t limit_bytes) {
  return {413, fmt::format("the request body is over the server's limit of {} bytes (--max-body-size)", limit_bytes),
          "invalid_request_error", "", "request_too_large"};
}

ApiError length_missing() {
  return {411, "the request has no Content-Length: send the JSON body with one (curl -d '...' sets it)",
          "invalid_request_error", "", "length_required"};
}

ApiError bad_content_length(const std::string& value) {
  return {400, fmt::format("the request's Content-Length '{}' is not one decimal number of bytes", value),
          "invalid_request_error", "", "invalid_content_length"};
}

ApiError length_required() {
  return {411,
          "the request body was sent in chunks (Transfer-Encoding: chunked); send it with a Content-Length, which "
          "the server checks against its limit (--max-body-size) before reading",
          "invalid_request_error", "", "length_required"};
}

ApiError encoded_body_refused(const std::string& encoding) {
  return {415,
          fmt::format("the request body is compressed (Content-Encoding: {}); send it uncompressed: a compressed "
                      "body's size is not known until it has been expanded",
                      encoding),
          "invalid_request_error", "", "unsupported_content_encoding"};
}

ApiError form_too_large(size_t form_limit_bytes) {
  return {413,
          fmt::format("the body was sent as a form (Content-Type: application/x-www-form-urlencoded, curl -d's "
                      "default), which is limited to {} bytes; send it as JSON with the header "
                      "'Content-Type: application/json'",
                      form_limit_bytes),
          "invalid_request_error", "", "request_too_large"};
}

ApiError engine_error(std::string message) { return {500, std::move(message), "server_error", "", ""}; }

ApiError server_stopping() {
  return {503, "the server is stopping: send the request to its next run", "server_error", "", "server_stopping"};
}

ApiError error_for_status(int status) {
  std::string what;
  switch (status) {
    case 400: what = "malformed HTTP request"; break;
    case 405: what = "method not allowed"; break;
    case 408: what = "request timed out"; break;
    case 414: what = "request URI too long"; break;
    case 416: what = "range not satisfiable"; break;
    case 431: what = "request header fields too large"; break;
    default: what = status >= 500 ? "internal server error" : "request failed"; break;
  }
  return {status, fmt::format("{} (HTTP {})", what, status), status >= 500 ? "server_error" : "invalid_request_error",
          "", ""};
}

}  // namespace kvscope::server
