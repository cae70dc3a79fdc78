// `kvscope-cli chat`: an interactive conversation in the terminal. Each turn
// hands the engine the whole history as messages; the engine renders the
// model's chat template and tokenises. Commands: /reset, /exit (and end of input).
// Ctrl-C while a reply streams stops that reply (the history keeps what was
// produced); Ctrl-C at the prompt, or twice during a reply, quits. A message
// that starts with "/" is written "//..." (one slash is dropped).
//
// The engine is stepped on this thread; SIGINT only bumps a counter
// (sigint_counter.h), which the step loop reads between steps. Non-interactive
// use (tests): printf 'Hello\n/exit\n' | kvscope-cli chat --temp 0 -n 40
#include <chrono>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include "common_options.h"
#include "sigint_counter.h"

namespace kvscope::cli {
namespace {

struct ChatOptions {
  EngineOptions engine;
  SamplingParams sampling;
  std::string system;
  bool system_given = false;
  const CLI::App* cmd = nullptr;  // to tell which sampling options were typed
};

struct Reply {
  bool submitted = false;
  std::string text;
  FinishReason finish = FinishReason::None;
  std::string error;
  RequestStats stats;
  bool quit = false;  // Ctrl-C pressed twice while streaming
};

Reply stream_reply(Engine& engine, const std::vector<ChatMessage>& history, const SamplingParams& sampling) {
  Reply reply;
  GenerationRequest request;
  request.messages = history;
  request.sampling = sampling;
  request.on_event = [&reply](const TokenEvent& ev) {
    reply.text += ev.text;
    write_stdout(ev.text);
    if (ev.finish != FinishReason::None) {
      reply.finish = ev.finish;
      reply.error = ev.error;
      reply.stats = ev.stats;
    }
  };
  SubmittedPrompt submitted;
  auto id = engine.submit(std::move(request), &submitted);
  if (!id.ok()) {
    reply.error = id.error();
    return reply;
  }
  reply.submitted = true;
  for (const std::string& w : submitted.warnings) print_warning(w);
  int seen = SigintCounter::count();
  int num_pressed = 0;
  while (engine.has_work()) {
    if (const int now = SigintCounter::count(); now != seen) {
      num_pressed += now - seen;
      seen = now;
      engine.cancel(*id);
      if (num_pressed >= 2) reply.quit = true;
    }
    engine.step();
  }
  return reply;
}

void print_stats(const Reply& reply) {
  if (!isatty(STDERR_FILENO)) return;
  const RequestStats& s = reply.stats;
  const double tok_s = s.total_time_s > 0 ? s.num_generated_tokens / s.total_time_s : 0.0;
  std::string line = fmt::format("[{} tokens, {:.1f} tok/s, decode {:.1f} tok/s, first token {:.2f} s, prompt {} tokens",
                                 s.num_generated_tokens, tok_s, s.decode_tokens_per_s, s.time_to_first_token_s,
                                 s.num_prompt_tokens);
  if (reply.finish == FinishReason::Cancelled) line += ", stopped";
  if (reply.finish == FinishReason::ContextFull) line += ", context full: /reset to start over";
  fmt::print(stderr, "\x1b[2m{}]\x1b[0m\n", line);
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

int run_chat(const ChatOptions& options) {
  ChatOptions o = options;
  int rc = kExitOk;
  std::unique_ptr<Engine> engine = open_engine(o.engine, rc);
  if (!engine) return rc;
  // What the user did not type comes from the model file, else kvscope's chat defaults.
  const std::string defaults = apply_chat_sampling_defaults(*o.cmd, engine->model_info(), o.sampling);
  if (!check_sampling(o.sampling)) return kExitUsage;
  const bool interactive = isatty(STDIN_FILENO) != 0;
  if (interactive) {
    fmt::print(stderr, "kvscope chat with {} ({} template). /reset clears the history, /exit or Ctrl-D quits; "
               "Ctrl-C stops a reply.\n", engine->model_info().name, engine->model_info().chat_template_family);
  }
  // On stderr also when piped: a log of a scripted chat says what sampled it.
  fmt::print(stderr, "sampling: {}\n", defaults);
  SigintCounter interrupts;
  std::vector<ChatMessage> history;
  // Given at all: --system "" is an empty system message (which keeps a
  // template's default one out), as generate --chat sends it.
  if (o.system_given) history.push_back({"system", o.system});
  const size_t num_fixed = history.size();

  std::string line;
  while (true) {
    if (interactive) write_stdout("> ");
    const int seen = SigintCounter::count();
    const bool got_line = static_cast<bool>(std::getline(std::cin, line));
    if (SigintCounter::count() != seen || !got_line) {  // Ctrl-C at the prompt, or end of input
      if (interactive) write_stdout("\n");
      break;
    }
    std::string input = trim(line);
    if (input.empty()) continue;
    if (input == "/exit" || input == "/quit") break;
    if (input == "/reset") {
      history.resize(num_fixed);
      if (interactive) fmt::print(stderr, "(history cleared)\n");
      continue;
    }
    if (input == "/help" || input == "/?") {
      fmt::print(stderr, "/reset clears the history, /exit (or Ctrl-D) quits; Ctrl-C stops a reply; a message "
                         "that starts with / is sent as //...\n");
      continue;
    }
    if (input.starts_with("//")) {
      input.erase(0, 1);  // "//etc/hosts is what?" sends "/etc/hosts is what?"
    } else if (input.front() == '/') {
      fmt::print(stderr, "unknown command {}: /reset clears the history, /exit quits, /help says so (to send a "
                         "message that starts with /, write //)\n", input);
      continue;
    }
    history.push_back({"user", input});
    const Reply reply = stream_reply(*engine, history, o.sampling);
    if (!reply.submitted || reply.finish == FinishReason::Error) {
      if (reply.submitted) write_stdout("\n");
      print_error(reply.error + (reply.submitted ? "" : " (/reset starts a new conversation)"));
      history.pop_back();
      continue;
    }
    history.push_back({"assistant", reply.text});
    if (reply.text.empty() || reply.text.back() != '\n') write_stdout("\n");
    // Said whether or not stderr is a terminal (unlike the stats line).
    print_context_notes(*engine, reply.stats, reply.finish);
    print_stats(reply);
    if (reply.quit) break;
  }
  return kExitOk;
}

}  // namespace

Command add_chat_command(CLI::App& parent) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* cmd = parent.add_subcommand("chat", "Chat with the model in the terminal");
  cmd->add_option_function<std::string>(
      "--system",
      [o](const std::string& text) {
        o->system = text;
        o->system_given = true;
      },
      "system message (\"\" sends an empty one, which keeps a template's default system message out)");
  add_engine_options(*cmd, o->engine);
  add_sampling_options(*cmd, o->sampling, /*defaults_from_model=*/true);
  o->cmd = cmd;
  return {cmd, [o] { return run_chat(*o); }};
}

}  // namespace kvscope::cli
