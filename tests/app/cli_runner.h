// run_cli: runs the built kvscope-cli (path from the KVSCOPE_CLI_PATH compile
// definition) with arguments and optional stdin, capturing stdout, stderr and
// the exit code; run_program does the same for any program. Shared by cli_test.cpp (unit) and cli_model_test.cpp (model).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kvscope::test {

struct CliResult {
  int exit_code = -1;  // -1: did not exit normally
  std::string out;
  std::string err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q.append("'\\''");
    else q.push_back(c);
  }
  q.push_back('\'');
  return q;
}

// Any program, the same way (run_cli below is this with kvscope-cli).
inline CliResult run_program(const std::string& program, const std::vector<std::string>& args,
                             const std::string& stdin_text = {}) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const std::string stem = (fs::temp_directory_path() / ("kvscope-cli-test-" + std::to_string(::getpid()) + "-" +
                                                         std::to_string(counter++))).string();
  const std::string in_path = stem + ".in", err_path = stem + ".err";
  std::ofstream(in_path, std::ios::binary) << stdin_text;
  // Appends only: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string here.
  std::string cmd = shell_quote(program);
  for (const std::string& a : args) cmd.append(" ").append(shell_quote(a));
  cmd.append(" <").append(shell_quote(in_path)).append(" 2>").append(shell_quote(err_path));

  CliResult r;
  if (FILE* pipe = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
    const int status = ::pclose(pipe);
    if (status != -1 && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  }
  std::stringstream err;
  err << std::ifstream(err_path, std::ios::binary).rdbuf();
  r.err = err.str();
  fs::remove(in_path);
  fs::remove(err_path);
  return r;
}

inline CliResult run_cli(const std::vector<std::string>& args, const std::string& stdin_text = {}) {
  return run_program(KVSCOPE_CLI_PATH, args, stdin_text);
}

}  // namespace kvscope::test
