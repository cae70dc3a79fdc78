// `kvscope-cli tokenize`: text -> token ids with a GGUF file's tokenizer
// (vocabulary-only files work) or a Hugging Face directory's (no weights
// read). A tokenizer-only path on purpose: it needs no Engine, so it works on
// vocabularies without a model. Prints the ids on one line, or with --pieces
// one "id<TAB>piece" line per token, or with --json an object. Text with no
// token of its own is replaced (tokenizer.h, EncodeIssues) with a warning on
// stderr.
//
//   kvscope-cli tokenize --model ggml-vocab-starcoder.gguf --text "Hello world"
//   echo "<|im_start|>user" | kvscope-cli tokenize --parse-special --pieces
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common_options.h"
#include "file_args.h"

namespace kvscope::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool parse_special = false;
  bool add_bos = false;
  bool pieces = false;
  bool json = false;
  CLI::Option* text_option = nullptr;
};

std::optional<std::string> read_text(const TokenizeOptions& o) {
  if (o.text_option->count() > 0) return o.text;
  if (!o.file.empty()) {
    Result<std::string> file = read_file_arg(o.file);  // a file is tokenised byte for byte
    if (!file.ok()) {
      print_error(fmt::format("--file: {}", file.error()));
      return std::nullopt;
    }
    return std::move(file).value();
  }
  std::stringstream buffer;
  buffer << std::cin.rdbuf();
  std::string text = buffer.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();  // the pipe's final newline
  return text;
}

int run_tokenize(const TokenizeOptions& o) {
  const std::optional<std::string> text = read_text(o);
  if (!text) return kExitUsage;
  const std::optional<std::string> path = resolve_model_path(o.model);
  if (!path) return kExitRuntime;
  auto tokenizer = TextTokenizer::open(*path);
  if (!tokenizer.ok()) {
    print_error(tokenizer.error());
    return kExitRuntime;
  }
  const TextTokenizer& tok = **tokenizer;
  std::string warning;
  const std::vector<int32_t> ids = tok.encode(*text, o.parse_special, o.add_bos, &warning);
  if (!warning.empty()) print_warning(warning);

  if (o.json) {
    nlohmann::ordered_json pieces = nlohmann::ordered_json::array();
    for (int32_t id : ids) pieces.push_back(tok.piece(id));
    const nlohmann::ordered_json j = {{"ids", ids}, {"pieces", pieces}, {"num_tokens", ids.size()}};
    write_stdout(dump_json(j) + "\n");
  } else if (o.pieces) {
    std::string out;
    // Escaped, so that a piece holding a newline or a tab (SentencePiece
    // vocabularies keep them raw) stays on its own line and column.
    for (int32_t id : ids) out += fmt::format("{}\t{}\n", id, escape_line(tok.piece(id)));
    write_stdout(out);
  } else {
    write_stdout(fmt::format("{}\n", fmt::join(ids, " ")));
  }
  return kExitOk;
}

}  // namespace

Command add_tokenize_command(CLI::App& parent) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = parent.add_subcommand("tokenize", "Turn text into token ids with a model's tokenizer");
  cmd->add_option("--model", o->model, "GGUF file (vocabulary-only files too) or Hugging Face model directory (default: the default model)");
  // Also positional: `tokenize "Hello"`.
  o->text_option =
      cmd->add_option("text,-t,--text", o->text, "text to tokenise, as --text or alone (else --file, else stdin)");
  cmd->add_option("-f,--file", o->file, "read the text from a file")->excludes(o->text_option);
  cmd->add_flag("--parse-special", o->parse_special, "turn control tokens written as text into their ids");
  cmd->add_flag("--add-bos", o->add_bos, "start with BOS when the vocabulary asks for it");
  cmd->add_flag("--pieces", o->pieces,
                "print one 'id<TAB>piece' line per token (newlines, tabs, backslashes and control bytes escaped)");
  cmd->add_flag("--json", o->json, "print a JSON object");
  return {cmd, [o] { return run_tokenize(*o); }};
}

}  // namespace kvscope::cli
