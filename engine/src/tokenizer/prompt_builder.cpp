#include "tokenizer/prompt_builder.h"

#include <fmt/format.h>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {

Result<SubmittedPrompt> build_prompt(const GenerationRequest& request, const Tokenizer& tokenizer,
                                     const ChatTemplate& chat_template) {
  const int num_forms = int{!request.prompt_tokens.empty()} + int{!request.messages.empty()} +
                        int{!request.prompt.empty()};
  if (num_forms > 1) {
    return Error{"the request gives more than one prompt (token ids, chat messages, text); give one"};
  }
  SubmittedPrompt out;
  if (!request.prompt_tokens.empty()) {
    out.tokens = request.prompt_tokens;
    return out;
  }
  // Raw text asks for its control tokens to be parsed (kvscope/request.h);
  // a chat prompt parses only the template's own markers, never the text of
  // a message.
  if (!request.tools_json.empty() && request.messages.empty()) {
    return Error{"tools are offered with chat messages only"};
  }
  RenderedPrompt rendered;
  if (request.messages.empty()) {
    rendered.text = request.prompt;
  } else if (!request.tools_json.empty()) {
    Result<RenderedPrompt> with_tools = chat_template.render_with_tools(request.messages, request.tools_json);
    if (!with_tools) return Error{with_tools.error()};
    rendered = std::move(with_tools).value();
  } else {
    rendered = chat_template.render_prompt(request.messages, /*add_generation_prompt=*/true);
    for (std::string& w : rendered.warnings) out.warnings.push_back("chat template: " + std::move(w));
  }
  const std::string& text = rendered.text;
  // BOS once: a template that writes BOS's text (Gemma's "<bos>") already
  // gives its id below, as does raw text that starts with it. A message
  // that starts with that text does not: a message is plain text, so with a
  // template that puts it first, BOS still has to be added.
  const bool message_first = !rendered.message_ranges.empty() && rendered.message_ranges.front().begin == 0 &&
                             rendered.message_ranges.front().end > 0;
  const bool text_gives_bos = chat_template.renders_bos(text) && !message_first;
  if (tokenizer.add_bos() && tokenizer.bos_id() >= 0 && !text_gives_bos) {
    out.tokens.push_back(tokenizer.bos_id());
  }
  EncodeIssues issues;
  const std::vector<int32_t> ids = tokenizer.encode_with_plain_ranges(text, rendered.message_ranges, &issues);
  out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
  if (issues.any()) out.warnings.push_back(fmt::format("prompt: {}", describe(issues)));
  if (ids.empty()) return Error{"the prompt is empty"};
  return out;
}

}  // namespace kvscope
