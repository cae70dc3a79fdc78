// Files named on kvscope-cli's command line (--prompt-file, tokenize --file,
// --trace, --out, --out-dir): read or checked up front, with a message that says what is wrong
// with the path rather than what went wrong later (a directory given as a
// prompt file used to read as an empty prompt).
//
// Tests: tests/app/cli_input_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// A file the command reads, named so that an output path equal to it can be
// refused in words ("the model").
struct InputFile {
  std::string what;
  std::string path;  // empty: not given
};

// Whether `path` can be created or overwritten as a file, checked before the
// work that produces it. An output is never one of `inputs` nor an existing
// GGUF file: a slip of --trace must not overwrite the model it runs. Errors:
// "an empty path", "'X' is a directory, not a file", "the folder of 'X' does
// not exist", "cannot write 'X': <reason>", "'X' is <what> this command reads",
// "'X' is a GGUF model file".
Status check_output_file(const std::string& path, const std::vector<InputFile>& inputs = {});

// Whether `dir` is, or can be created as, a folder to write files in (made
// here, with its parents). Errors: "'X' is a file, not a folder", "cannot
// create the folder 'X': <reason>", "cannot write in 'X': <reason>".
Status prepare_output_dir(const std::string& dir);

}  // namespace kvscope::cli
