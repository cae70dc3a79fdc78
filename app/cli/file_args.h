// Files named on kvscope-cli's command line (--prompt-file, tokenize --file,
// --trace): read or checked up front, with a message that says what is wrong
// with the path rather than what went wrong later (a directory given as a
// prompt file used to read as an empty prompt).
//
// Tests: tests/app/cli_input_test.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "kvscope/result.h"

namespace kvscope::cli {

// The largest text file read as a prompt or for tokenize: about 4 million
// tokens of English, as long as the longest context the settings allow.
// Past it the file is most likely not text (a model file given by mistake
// took 22 GB to tokenize before failing).
inline constexpr int64_t kMaxTextFileBytes = int64_t{16} << 20;

// The file's bytes. Errors: "'X' is a directory, not a file", "'X' does not
// exist", "cannot read 'X': <reason>", "'X' is N MiB: text files are read up
// to 16 MiB".
Result<std::string> read_file_arg(const std::string& path, int64_t max_bytes = kMaxTextFileBytes);

// Whether `path` can be created or overwritten as a file, checked before the
// work that produces it. Errors: "'X' is a directory, not a file", "the
// folder of 'X' does not exist".
Status check_output_file(const std::string& path);

}  // namespace kvscope::cli
