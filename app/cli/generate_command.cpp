// `kvscope-cli generate`: one completion, streamed to stdout, or with --json
// one JSON object (ids, text, finish reason, timings, seed, warnings). The
// prompt goes to the engine as text, or with --chat as messages; the engine
// builds the ids (BOS, chat template, tokenisation) and reports what ran.
//
//   kvscope-cli generate --prompt "The capital of France is" -n 16 --temp 0
//   echo "Write a haiku" | kvscope-cli generate --chat --json
#include <iostream>
#include <iterator>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "kvscope/chrome_trace.h"
#include "common_options.h"
#include "file_args.h"
#include "sigint_counter.h"

namespace kvscope::cli {
namespace {

struct GenerateOptions {
  EngineOptions engine;
  SamplingParams sampling;
  std::string prompt;
  std::string prompt_file;
  std::string system;
  CLI::Option* system_option = nullptr;  // given at all: --system "" is an empty system message, not none
  bool chat = false;
  bool json = false;
  std::string trace;  // Chrome-trace JSON of the engine's events, when given
  CLI::Option* trace_option = nullptr;
  CLI::Option* prompt_option = nullptr;  // given at all (an empty --prompt is an error, not stdin)
};

// What the request's callback collected.
struct Outcome {
  std::vector<int32_t> ids;  // [num generated]
  std::string text;
  FinishReason finish = FinishReason::None;
  std::string error;
  RequestStats stats;
};

// The prompt from --prompt, --prompt-file or stdin; nullopt (message printed) on a read error.
std::optional<std::string> read_prompt(const GenerateOptions& o) {
  if (o.prompt_option->count() > 0) return o.prompt;
  std::string text;
  if (!o.prompt_file.empty()) {
    Result<std::string> file = read_file_arg(o.prompt_file);
    if (!file.ok()) {
      print_error(fmt::format("--prompt-file: {}", file.error()));
      return std::nullopt;
    }
    text = std::move(file).value();
  } else {
    if (isatty(STDIN_FILENO)) fmt::print(stderr, "(reading the prompt from stdin; end it with Ctrl-D)\n");
    std::stringstream buffer;
    buffer << std::cin.rdbuf();
    text = buffer.str();
  }
  // A file or a pipe usually ends with one newline that is not part of the prompt.
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// `setting_warnings`: the engine's (Engine::warnings(), printed on stderr at
// load), before the request's own, so the JSON says everything stderr did.
nlohmann::ordered_json outcome_json(const SubmittedPrompt& submitted, const Outcome& out,
                                    const std::vector<std::string>& setting_warnings) {
  std::vector<std::string> warnings = setting_warnings;
  warnings.insert(warnings.end(), submitted.warnings.begin(), submitted.warnings.end());
  const std::vector<int32_t>& prompt = submitted.tokens;
  const RequestStats& s = out.stats;
  const double ttft = s.time_to_first_token_s;
  nlohmann::ordered_json timings = {
      {"time_to_first_token_s", ttft},
      {"prefill_tok_s", ttft > 0 ? static_cast<double>(prompt.size()) / ttft : 0.0},
      {"decode_tok_s", s.decode_tokens_per_s},
      {"total_s", s.total_time_s},
  };
  return {
      {"prompt_ids", prompt},
      {"generated_ids", out.ids},
      {"num_prompt_tokens", prompt.size()},
      {"num_generated_tokens", out.ids.size()},
      {"text", out.text},
      {"finish_reason", finish_reason_name(out.finish)},
      {"timings", timings},
      {"seed", s.seed},
      // Speculative decoding (docs/speculative.md); zeros with --spec off.
      {"spec", {{"method", s.spec_method.empty() ? "off" : s.spec_method},
                {"drafts", s.num_drafts},
                {"draft_tokens", s.num_draft_tokens},
                {"accepted_tokens", s.num_accepted_tokens},
                {"pauses", s.num_spec_pauses}}},
      // Context overflow (docs/context-overflow.md): tokens that left the
      // middle of the context, by shifts and by truncate_middle at submit.
      {"context", {{"overflow_shifts", s.num_context_shifts}, {"dropped_tokens", s.num_dropped_tokens}}},
      {"warnings", warnings},
  };
}

int run_generate(const GenerateOptions& o) {
  if (!check_sampling(o.sampling)) return kExitUsage;
  const std::optional<std::string> text = read_prompt(o);
  if (!text) return kExitUsage;
  if (text->empty()) {
    print_error("the prompt is empty (give --prompt TEXT, --prompt-file FILE or text on stdin)");
    return kExitUsage;
  }
  const bool tracing = o.trace_option->count() > 0;
  if (tracing) {
    std::vector<InputFile> inputs = model_files_given(o.engine);
    inputs.push_back({"the prompt file", o.prompt_file});
    if (Status s = check_output_file(o.trace, inputs); !s.ok()) {
      print_error(fmt::format("--trace: {}", s.error()));
      return kExitUsage;
    }
  }
  int rc = kExitOk;
  std::unique_ptr<Engine> engine = open_engine(o.engine, rc);
  if (!engine) return rc;

  Outcome out;
  GenerationRequest request;
  if (o.chat) {
    if (o.system_option->count() > 0) request.messages.push_back({"system", o.system});
    request.messages.push_back({"user", *text});
  } else {
    request.prompt = *text;
  }
  request.sampling = o.sampling;
  const bool stream = !o.json;
  request.on_event = [&out, stream](const TokenEvent& ev) {
    if (ev.token >= 0) out.ids.push_back(ev.token);
    out.text += ev.text;
    if (stream) write_stdout(ev.text);
    if (ev.finish != FinishReason::None) {
      out.finish = ev.finish;
      out.error = ev.error;
      out.stats = ev.stats;
    }
  };
  engine->set_tracing(tracing);
  SubmittedPrompt submitted;
  auto id = engine->submit(std::move(request), &submitted);
  if (!id.ok()) {
    print_error(id.error());
    return kExitRuntime;
  }
  for (const std::string& w : submitted.warnings) print_warning(w);
  // Ctrl-C stops the reply, not the program: what was generated is printed
  // (finish reason "cancelled") and the trace written, then exit 130. A
  // second Ctrl-C (a long prompt step has not ended yet) quits at once.
  {
    SigintCounter interrupts(/*second_press_quits=*/true);
    const int seen = SigintCounter::count();
    bool cancelled = false;
    while (engine->has_work()) {
      if (!cancelled && SigintCounter::count() != seen) {
        cancelled = true;
        engine->cancel(*id);
      }
      engine->step();
    }
  }

  // The result first, the trace after: a trace that cannot be written must
  // not cost the reply it describes.
  int exit_code = out.finish == FinishReason::Cancelled ? kExitInterrupted : kExitOk;
  if (out.finish == FinishReason::Error) {
    if (stream) write_stdout("\n");
    print_error(out.error.empty() ? "generation failed" : out.error);
    exit_code = kExitRuntime;
  } else if (o.json) {
    write_stdout(dump_json(outcome_json(submitted, out, engine->warnings())) + "\n");
  } else {
    if (!out.text.empty() && out.text.back() != '\n') write_stdout("\n");
    print_context_notes(*engine, out.stats, out.finish);  // --json has them in "context" and "finish_reason"
  }
  if (tracing) {
    if (Status s = write_chrome_trace(engine->take_events(), o.trace); !s.ok()) {
      print_error(s.error());
      exit_code = kExitRuntime;
    }
  }
  return exit_code;
}

}  // namespace

Command add_generate_command(CLI::App& parent) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = parent.add_subcommand("generate", "Complete a prompt, streaming the text to stdout");
  // Also positional: `generate "Once upon a time"` is what people type first.
  o->prompt_option = cmd->add_option("prompt,-p,--prompt", o->prompt,
                                     "prompt text, as --prompt or alone (else --prompt-file, else stdin)");
  cmd->add_option("-f,--prompt-file", o->prompt_file, "read the prompt from a file")->excludes(o->prompt_option);
  auto* chat = cmd->add_flag("--chat", o->chat, "render the prompt as a user message with the model's chat template");
  o->system_option = cmd->add_option("--system", o->system,
                                     "system message (with --chat; \"\" sends an empty one, which keeps a "
                                     "template's default system message out)")
                         ->needs(chat);
  cmd->add_flag("--json", o->json, "print one JSON object instead of streaming text");
  o->trace_option =
      cmd->add_option("--trace", o->trace, "write the engine's events as Chrome-trace JSON (open in Perfetto)");
  add_engine_options(*cmd, o->engine);
  add_sampling_options(*cmd, o->sampling);
  return {cmd, [o] { return run_generate(*o); }};
}

}  // namespace kvscope::cli
