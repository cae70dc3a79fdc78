// ChatTemplate: renders a conversation into the prompt text a chat model was
// trained on. The model's own template (the GGUF's tokenizer.chat_template, a
// Jinja template) is run by kvscope's Jinja interpreter (tokenizer/jinja/),
// with the context transformers' apply_chat_template gives it. When the file
// has no template, or its template does not parse or refuses a conversation,
// one of five hand-written formats renders instead (and the prompt's warnings
// say so). The template text also picks that format and the stop strings:
//   ChatML   <|im_start|>role\ncontent<|im_end|>\n ...     (SmolLM2, Qwen)
//   Gemma    <bos><start_of_turn>user\n...<end_of_turn>\n   (system folded into first user turn)
//   Llama 2  <s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST] reply </s>
//   Llama 3  <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
//   Mistral  <s>[INST] sys\n\nuser [/INST]reply</s>
// render_prompt() also says which bytes are the messages' own text, so that
// Tokenizer::encode_with_plain_ranges makes control tokens of the template's
// markers only: a message that contains "<|im_end|>" cannot end its turn.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/chat_message.h"
#include "kvscope/result.h"
#include "kvscope/tool_calls.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_data.h"

namespace kvscope {

namespace jinja {
class Template;
class Value;
struct RenderOptions;
}  // namespace jinja

enum class ChatFamily { kChatMl, kGemma, kLlama2, kLlama3, kMistral };

// A rendered conversation: the prompt text and where in it the messages'
// own text (contents, roles, system prompt) sits.
struct RenderedPrompt {
  std::string text;
  std::vector<TextRange> message_ranges;  // ascending, non-overlapping byte ranges of `text`
  std::vector<std::string> warnings;      // for a person: why the model's template was not used
};

class ChatTemplate {
 public:
  // Family from the template text, else from the vocabulary's special tokens
  // and architecture; BOS/EOS text and stop ids from the tokenizer. A ChatML
  // template's literal default system prompt (SmolLM2, Qwen) is kept.
  // The model's Jinja template renders when it parses (else a warning, see
  // template_warning()).
  static ChatTemplate from_vocab(const VocabData& vocab, const Tokenizer& tokenizer);
  // Renders `messages` with a model template as transformers'
  // apply_chat_template does: context messages (role, content),
  // add_generation_prompt, bos_token, eos_token, documents = None, and
  // tools from `tools_json` (OpenAI's tools array as JSON text; "" = None).
  // Tool calls and tool results go in as transformers' messages have them.
  // Errors: the template's raise_exception or a runtime error.
  static Result<RenderedPrompt> render_model_template(const jinja::Template& model_template,
                                                       const std::vector<ChatMessage>& messages,
                                                       bool add_generation_prompt, std::string_view bos_text,
                                                       std::string_view eos_text,
                                                       const jinja::RenderOptions& options,
                                                       std::string_view tools_json = {});
  // The same with JSON-like context: `messages` may carry tool calls and
  // tool results, `tools` (None for none) the tool schemas. Every string in
  // either is message text.
  static Result<RenderedPrompt> render_model_template(const jinja::Template& model_template,
                                                       const jinja::Value& messages, const jinja::Value& tools,
                                                       bool add_generation_prompt, std::string_view bos_text,
                                                       std::string_view eos_text,
                                                       const jinja::RenderOptions& options);
  // Substring detection on a Jinja template; nullopt when nothing matches.
  static std::optional<ChatFamily> detect(std::string_view template_text);
  // The literal system prompt a ChatML template inserts when the
  // conversation has none ("" if it inserts none).
  static std::string default_system_prompt(std::string_view template_text);

  // bos_text/eos_text: the tokens' text (e.g. "<s>", "</s>"), used by the
  // formats that write them; stop_ids: ids that end a reply.
  ChatTemplate(ChatFamily family, std::string bos_text, std::string eos_text,
               std::string default_system = {}, std::vector<int32_t> stop_ids = {});

  // Renders with `source` (a Jinja chat template) from now on; when it does
  // not parse, keeps the family format and records why in template_warning().
  void use_model_template(std::string_view source);
  // Whether the model's own template renders (use_model_template succeeded).
  bool uses_model_template() const { return model_template_ != nullptr; }
  // Why the model's template is not used ("" when it is, or there is none).
  const std::string& template_warning() const { return template_warning_; }

  // The hand-written format: the fallback, and what picks the stop strings.
  ChatFamily family() const { return family_; }
  // "chatml", "gemma", "llama2", "llama3", "mistral".
  std::string_view family_name() const;
  // Prompt text for `messages`; with add_generation_prompt it ends where the
  // assistant's reply begins (Llama 2 and Mistral need no marker there).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // The same text, with the ranges that came from the messages. When the
  // model's template refuses the conversation, the family format renders it
  // and `warnings` says so.
  RenderedPrompt render_prompt(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // The conversation with the tools offered (OpenAI's tools array as JSON
  // text), ready for the reply. Errors, rather than a fallback that would
  // drop the tools: the template offers none, or refuses the conversation.
  Result<RenderedPrompt> render_with_tools(const std::vector<ChatMessage>& messages, std::string_view tools_json) const;
  // How the model's template asks for calls to be written (None: no tools).
  ToolCallFormat tool_call_format() const { return tool_call_format_; }
  // Whether render() writes the BOS token's text itself (then callers must
  // not add a BOS id as well).
  bool writes_bos() const;
  // Whether this rendered text already starts with BOS text.
  bool renders_bos(std::string_view rendered) const;
  // Text that ends the assistant's turn (e.g. "<|im_end|>").
  std::vector<std::string> stop_strings() const;
  // Token ids that end the assistant's turn (turn ender and EOS).
  const std::vector<int32_t>& stop_token_ids() const { return stop_ids_; }

 private:
  RenderedPrompt render_family(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  RenderedPrompt render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  RenderedPrompt render_gemma(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  RenderedPrompt render_llama2(const std::vector<ChatMessage>& messages) const;
  RenderedPrompt render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  RenderedPrompt render_mistral(const std::vector<ChatMessage>& messages) const;

  ChatFamily family_;
  std::string bos_text_;
  std::string eos_text_;
  std::string default_system_;
  std::vector<int32_t> stop_ids_;
  std::shared_ptr<const jinja::Template> model_template_;  // shared: ChatTemplate stays copyable
  std::string template_source_;
  std::string template_warning_;
  ToolCallFormat tool_call_format_ = ToolCallFormat::None;
};

}  // namespace kvscope
