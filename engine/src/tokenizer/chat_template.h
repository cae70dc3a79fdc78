// ChatTemplate: renders a conversation into the prompt text a chat model was
// trained on. Rather than running Jinja, the template text in the GGUF
// (tokenizer.chat_template) is inspected to pick one of five known formats,
// each reproduced exactly as its reference template renders it:
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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/chat_message.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_data.h"

namespace kvscope {

enum class ChatFamily { kChatMl, kGemma, kLlama2, kLlama3, kMistral };

// A rendered conversation: the prompt text and where in it the messages'
// own text (contents, roles, system prompt) sits.
struct RenderedPrompt {
  std::string text;
  std::vector<TextRange> message_ranges;  // ascending, non-overlapping byte ranges of `text`
};

class ChatTemplate {
 public:
  // Family from the template text, else from the vocabulary's special tokens
  // and architecture; BOS/EOS text and stop ids from the tokenizer. A ChatML
  // template's literal default system prompt (SmolLM2, Qwen) is kept.
  static ChatTemplate from_vocab(const VocabData& vocab, const Tokenizer& tokenizer);
  // Substring detection on a Jinja template; nullopt when nothing matches.
  static std::optional<ChatFamily> detect(std::string_view template_text);
  // The literal system prompt a ChatML template inserts when the
  // conversation has none ("" if it inserts none).
  static std::string default_system_prompt(std::string_view template_text);

  // bos_text/eos_text: the tokens' text (e.g. "<s>", "</s>"), used by the
  // formats that write them; stop_ids: ids that end a reply.
  ChatTemplate(ChatFamily family, std::string bos_text, std::string eos_text,
               std::string default_system = {}, std::vector<int32_t> stop_ids = {});

  ChatFamily family() const { return family_; }
  // "chatml", "gemma", "llama2", "llama3", "mistral".
  std::string_view family_name() const;
  // Prompt text for `messages`; with add_generation_prompt it ends where the
  // assistant's reply begins (Llama 2 and Mistral need no marker there).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // The same text, with the ranges that came from the messages.
  RenderedPrompt render_prompt(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
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
};

}  // namespace kvscope
