// Files named on kvscope-cli's command line (--prompt-file, tokenize --file,
// --trace): read or checked up front, with a message that says what is wrong
// with the path rather than what went wrong later (a directory given as a
// prompt file used to read as an empty prompt).
//
// Tests: tests/app/cli_input_test.cpp.
#pragma once

#include <string>

#include "kvscope/result.h"

namespace kvscope::cli {

// The file's bytes. Errors: "'X' is a directory, not a file", "'X' does not
// exist", "cannot read 'X': <reason>".
Result<std::string> read_file_arg(const std::string& path);

// Whether `path` can be created or overwritten as a file, checked before the
// work that produces it. Errors: "'X' is a directory, not a file", "the
// folder of 'X' does not exist".
Status check_output_file(const std::string& path);

}  // namespace kvscope::cli
