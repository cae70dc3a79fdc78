// `kvscope-cli serve` run as a user runs it (label `unit`, a tiny random
// model): it prints where it listens, answers, and exits 0 on SIGTERM and on
// SIGINT (Ctrl-C) even with a streaming request in flight; its --help has
// every engine setting's option; bad options are usage errors (2), a missing
// model or a port in use are runtime errors (1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "app/cli_runner.h"
#include "kvscope/setting_table.h"
#include "support/tiny_model.h"
#include "test_server.h"

extern char** environ;

namespace kvscope {
namespace {

using ::testing::HasSubstr;

const std::string& tiny_model() {
  static const std::string path = [] {
    const std::string p = test::tiny_model_temp_path("serve_cli");
    EXPECT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, p).ok());
    return p;
  }();
  return path;
}

// kvscope-cli serve as a child process, its stderr read until the line that
// says where it listens.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    args.insert(args.begin(), KVSCOPE_CLI_PATH);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, KVSCOPE_CLI_PATH, &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);
    err_fd_ = pipe_fds[0];
  }
  ~ServeProcess() {
    if (pid_ > 0 && exit_code_ == kRunning) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (err_fd_ >= 0) ::close(err_fd_);
  }

  // Reads stderr until the "serving ... at http://HOST:PORT/v1" line; the port, or -1.
  int wait_for_port(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::regex serving(R"(at http://127\.0\.0\.1:(\d+)/v1)");
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      if (std::regex_search(err_, m, serving)) return std::stoi(m[1]);
      if (!read_some(100)) break;
    }
    return -1;
  }

  // Sends `signal` and waits up to 30 s for the exit code (-1: killed or still running).
  int stop(int signal) {
    ::kill(pid_, signal);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        while (read_some(10)) {
        }
        return exit_code_;
      }
      read_some(50);
    }
    return -1;
  }

  const std::string& err() const { return err_; }

 private:
  static constexpr int kRunning = -2;

  bool read_some(int timeout_ms) {
    pollfd p{err_fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return true;  // nothing yet
    char buf[4096];
    const ssize_t n = ::read(err_fd_, buf, sizeof buf);
    if (n <= 0) return false;
    err_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int err_fd_ = -1;
  int exit_code_ = kRunning;
  std::string err_;
};

TEST(ServeCli, ServesAndStopsCleanlyOnSigterm) {
  ServeProcess serve({"serve", "--model", tiny_model(), "--port", "0", "--threads", "1", "--num-blocks", "64",
                      "--model-id", "tiny"});
  const int port = serve.wait_for_port();
  ASSERT_GT(port, 0) << serve.err();
  EXPECT_THAT(serve.err(), HasSubstr("as model \"tiny\""));
  EXPECT_EQ(test::http_get(port, "/health").status, 200);
  const test::Reply r = test::http_post(port, "/v1/completions",
                                        nlohmann::json{{"model", "tiny"}, {"prompt", "Hi"}, {"max_tokens", 3}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(serve.stop(SIGTERM), 0) << serve.err();
  EXPECT_THAT(serve.err(), HasSubstr("stopping"));
}

TEST(ServeCli, CtrlCStopsItWhileAClientStreams) {
  ServeProcess serve({"serve", "--model", tiny_model(), "--port", "0", "--threads", "1", "--num-blocks", "64",
                      "--model-id", "tiny"});
  const int port = serve.wait_for_port();
  ASSERT_GT(port, 0) << serve.err();
  std::atomic<bool> streaming{false};
  std::thread client([&] {
    // Long enough to be running when the signal comes; the server ends it.
    test::http_post_streaming(port, "/v1/completions",
                              nlohmann::json{{"model", "tiny"}, {"prompt", "Hi"}, {"max_tokens", 400},
                                             {"ignore_eos", true}, {"stream", true}},
                              [&](const std::string&) {
                                streaming = true;
                                return true;
                              });
  });
  while (!streaming) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(serve.stop(SIGINT), 0) << serve.err();
  EXPECT_THAT(serve.err(), HasSubstr("interrupted"));
  client.join();
}

TEST(ServeCli, HelpListsEveryEngineSetting) {
  const test::CliResult r = test::run_cli({"serve", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* option : {"--host", "--port", "--api-key", "--allowed-origins", "--max-body-size",
                             "--max-connections", "--model-id"}) {
    EXPECT_THAT(r.out, HasSubstr(option));
  }
  for (const SettingSpec& s : engine_settings()) EXPECT_THAT(r.out, HasSubstr("--" + s.cli_option())) << s.key;
}

TEST(ServeCli, BadOptionsMissingModelAndBusyPort) {
  EXPECT_EQ(test::run_cli({"serve", "--model", tiny_model(), "--port", "70000"}).exit_code, 2);
  EXPECT_EQ(test::run_cli({"serve", "--model", tiny_model(), "--max-connections", "0"}).exit_code, 2);
  const test::CliResult missing = test::run_cli({"serve", "--model", "/nonexistent/model.gguf"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("does not exist"));

  ServeProcess first({"serve", "--model", tiny_model(), "--port", "0", "--threads", "1", "--num-blocks", "64"});
  const int port = first.wait_for_port();
  ASSERT_GT(port, 0) << first.err();
  const test::CliResult busy =
      test::run_cli({"serve", "--model", tiny_model(), "--port", std::to_string(port), "--threads", "1",
                     "--num-blocks", "64"});
  EXPECT_EQ(busy.exit_code, 1);
  EXPECT_THAT(busy.err, HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(port)));
  EXPECT_EQ(first.stop(SIGTERM), 0);
}

}  // namespace
}  // namespace kvscope
