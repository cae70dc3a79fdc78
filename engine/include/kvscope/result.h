// Result<T>: a value or a message a person can act on. Used at every boundary
// that takes user input (model files, settings, requests) so that nothing a
// user supplies can crash the program. (C++20 has no std::expected.)
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace kvscope {

struct Error {
  std::string message;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : data_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(data_); }
  const T& value() const& { assert(ok()); return std::get<0>(data_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const std::string& error() const { assert(!ok()); return std::get<1>(data_).message; }

 private:
  std::variant<T, Error> data_;
};

// Result of an operation with no value: ok, or an error message.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error.message)), ok_(false) {}  // NOLINT
  static Status success() { return Status(); }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
  bool ok_ = true;
};

}  // namespace kvscope

// Inside a function returning Result<...> or Status: assigns the value of the
// Result `expr` to `out`, or returns its error from the enclosing function.
#define KVSCOPE_ASSIGN(out, expr)               \
  do {                                          \
    auto kvscope_result_ = (expr);              \
    if (!kvscope_result_.ok()) {                \
      return ::kvscope::Error{kvscope_result_.error()}; \
    }                                           \
    (out) = std::move(kvscope_result_).value(); \
  } while (0)
