// libFuzzer target for chat templates (tokenizer/jinja/, through
// ChatTemplate::render_model_template as a chat request renders one): a
// model file's tokenizer.chat_template is untrusted text that runs on every
// chat, server and app request. Any template must parse into an error with a
// line and column, or render into a prompt or an error; never a crash, a
// hang, an exception, or memory out of bounds (run_fuzz.sh's rss limit also
// catches a template that grows a list or string without bound). A rendered
// prompt must respect the output limit, and its message ranges must lie in
// it, ascending and apart (the engine cuts control tokens out of them).
// Run: scripts/run_fuzz.sh [seconds]  (seeds: chat templates; dictionary: chat_template.dict)
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kvscope/chat_message.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvscope;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  const Result<jinja::Template> parsed = jinja::Template::parse(source);
  if (!parsed) {
    if (parsed.error().empty()) __builtin_trap();
    return 0;
  }
  // Small limits: every input stays fast, and a runaway template meets them.
  jinja::RenderOptions options;
  options.now_unix_seconds = 1'700'000'000;
  options.limits.max_steps = 200'000;
  options.limits.max_output_bytes = size_t{1} << 20;
  const std::vector<ChatMessage> messages = {{"system", "Be brief."},
                                             {"user", "Hi <|im_start|> {{ x }}"},
                                             {"assistant", "Hello."},
                                             {"user", "And now?"}};
  const Result<RenderedPrompt> rendered = ChatTemplate::render_model_template(
      *parsed, messages, /*add_generation_prompt=*/true, "<s>", "</s>", options);
  if (!rendered) {
    if (rendered.error().empty()) __builtin_trap();
    return 0;
  }
  if (rendered->text.size() > options.limits.max_output_bytes) __builtin_trap();
  size_t previous_end = 0;
  for (const TextRange& r : rendered->message_ranges) {
    if (r.begin < previous_end || r.end < r.begin || r.end > rendered->text.size()) __builtin_trap();
    previous_end = r.end;
  }
  return 0;
}
