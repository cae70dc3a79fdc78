// The interpreter's errors. Inside the interpreter a syntax or runtime error
// unwinds as a JinjaError (the evaluator is deeply recursive and almost every
// step can fail); the public entry points (template.h) catch it and return a
// Result error, so no caller ever sees an exception.
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope::jinja {

struct SourcePos {
  int line = 1;
  int column = 1;
};

class JinjaError : public std::runtime_error {
 public:
  JinjaError(const std::string& message, SourcePos pos) : std::runtime_error(message), pos_(pos) {}
  SourcePos pos() const { return pos_; }

 private:
  SourcePos pos_;
};

// Thrown by raise_exception(msg): the template itself refused the input.
class TemplateRaised : public JinjaError {
 public:
  using JinjaError::JinjaError;
};

}  // namespace kvscope::jinja
