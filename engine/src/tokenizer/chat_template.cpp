#include "tokenizer/chat_template.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tokenizer/jinja/json_value.h"
#include "tokenizer/jinja/template.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {

namespace {
bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// Jinja's `trim` / Python's str.strip() on ASCII whitespace.
std::string trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(kSpace);
  return std::string(s.substr(begin, end - begin + 1));
}

// Splits off a leading system message (the formats other than ChatML do not
// give it a turn of its own).
std::pair<std::string, std::vector<ChatMessage>> split_system(const std::vector<ChatMessage>& messages) {
  if (!messages.empty() && messages[0].role == "system")
    return {messages[0].content, std::vector<ChatMessage>(messages.begin() + 1, messages.end())};
  return {std::string(), messages};
}
}  // namespace

std::optional<ChatFamily> ChatTemplate::detect(std::string_view t) {
  if (contains(t, "<|im_start|>")) return ChatFamily::kChatMl;
  if (contains(t, "<start_of_turn>")) return ChatFamily::kGemma;
  if (contains(t, "<|start_header_id|>")) return ChatFamily::kLlama3;
  if (contains(t, "[INST]")) return contains(t, "<<SYS>>") ? ChatFamily::kLlama2 : ChatFamily::kMistral;
  return std::nullopt;
}

std::string ChatTemplate::default_system_prompt(std::string_view t) {
  constexpr std::string_view kOpen = "<|im_start|>system\n", kClose = "<|im_end|>";
  for (size_t pos = t.find(kOpen); pos != std::string_view::npos; pos = t.find(kOpen, pos + 1)) {
    const size_t begin = pos + kOpen.size();
    const size_t end = t.find(kClose, begin);
    if (end == std::string_view::npos) break;
    const std::string_view text = t.substr(begin, end - begin);
    // Only a literal counts; "' + message['content'] + '" is the user's own system turn.
    if (!text.empty() && text.find_first_of("{}'\"+") == std::string_view::npos) return std::string(text);
  }
  return {};
}

ChatTemplate ChatTemplate::from_vocab(const VocabData& vocab, const Tokenizer& tokenizer) {
  std::optional<ChatFamily> family = detect(vocab.chat_template);
  if (!family) {
    // No (or an unknown) template: the turn markers the vocabulary has say
    // which format the model was tuned on.
    if (tokenizer.token_id("<|im_start|>")) family = ChatFamily::kChatMl;
    else if (tokenizer.token_id("<start_of_turn>") || vocab.architecture.starts_with("gemma")) family = ChatFamily::kGemma;
    else if (tokenizer.token_id("<|start_header_id|>")) family = ChatFamily::kLlama3;
    else if (vocab.model == "llama" && vocab.architecture == "llama") family = ChatFamily::kLlama2;
    else family = ChatFamily::kChatMl;
  }
  const std::string bos(tokenizer.token_text(tokenizer.bos_id()));
  const std::string eos(tokenizer.token_text(tokenizer.eos_id()));
  ChatTemplate result(*family, bos, eos,
                      *family == ChatFamily::kChatMl ? default_system_prompt(vocab.chat_template) : "");
  for (const std::string& s : result.stop_strings()) {
    if (auto id = tokenizer.token_id(s)) result.stop_ids_.push_back(*id);
  }
  if (tokenizer.eos_id() >= 0 && std::find(result.stop_ids_.begin(), result.stop_ids_.end(),
                                           tokenizer.eos_id()) == result.stop_ids_.end())
    result.stop_ids_.push_back(tokenizer.eos_id());
  if (!vocab.chat_template.empty()) result.use_model_template(vocab.chat_template);
  return result;
}

void ChatTemplate::use_model_template(std::string_view source) {
  Result<jinja::Template> parsed = jinja::Template::parse(source);
  if (!parsed) {
    model_template_.reset();
    tool_call_format_ = ToolCallFormat::None;
    template_warning_ = "the model's chat template cannot be used (" + parsed.error() + "); using the built-in " +
                        std::string(family_name()) + " format instead";
    return;
  }
  model_template_ = std::make_shared<const jinja::Template>(std::move(parsed).value());
  template_source_ = std::string(source);
  tool_call_format_ = detect_tool_call_format(source);
  template_warning_.clear();
}

Result<RenderedPrompt> ChatTemplate::render_model_template(const jinja::Template& model_template,
                                                           const std::vector<ChatMessage>& messages,
                                                           bool add_generation_prompt, std::string_view bos_text,
                                                           std::string_view eos_text,
                                                           const jinja::RenderOptions& options,
                                                           std::string_view tools_json) {
  using jinja::Dict;
  using jinja::List;
  using jinja::TaintedString;
  using jinja::Value;
  // Roles and contents are the messages' own text: tainted, so no control
  // token is made of them (a role is chosen by the caller too).
  List message_values;
  for (const ChatMessage& m : messages) {
    Dict d;
    d.set("role", Value(TaintedString::from_message(m.role)));
    d.set("content", Value(TaintedString::from_message(m.content)));
    // The keys transformers' templates test with "is defined": set only when
    // the turn has them.
    if (!m.tool_calls.empty()) {
      List calls;
      for (const ToolCall& call : m.tool_calls) {
        Dict function;
        function.set("name", Value(TaintedString::from_message(call.name)));
        // Templates print arguments with |tojson or iterate them: a dict, as
        // transformers gets it; text that is not JSON stays text.
        const nlohmann::ordered_json args =
            nlohmann::ordered_json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
        function.set("arguments", args.is_discarded() ? Value(TaintedString::from_message(call.arguments))
                                                      : jinja::value_from_json(args, /*tainted=*/true));
        Dict c;
        c.set("id", Value(TaintedString::from_message(call.id)));
        c.set("type", Value(std::string("function")));
        c.set("function", Value(std::move(function)));
        calls.push_back(Value(std::move(c)));
      }
      d.set("tool_calls", Value(std::move(calls)));
    }
    if (!m.tool_call_id.empty()) d.set("tool_call_id", Value(TaintedString::from_message(m.tool_call_id)));
    if (!m.name.empty()) d.set("name", Value(TaintedString::from_message(m.name)));
    message_values.push_back(Value(std::move(d)));
  }
  Value tool_values{jinja::None{}};
  if (!tools_json.empty()) {
    const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(tools_json, nullptr, false);
    if (tools.is_discarded() || !tools.is_array()) return Error{"the tools are not a JSON array"};
    tool_values = jinja::value_from_json(tools, /*tainted=*/true);
  }
  return render_model_template(model_template, Value(std::move(message_values)), tool_values,
                               add_generation_prompt, bos_text, eos_text, options);
}

Result<RenderedPrompt> ChatTemplate::render_model_template(const jinja::Template& model_template,
                                                           const jinja::Value& messages, const jinja::Value& tools,
                                                           bool add_generation_prompt, std::string_view bos_text,
                                                           std::string_view eos_text,
                                                           const jinja::RenderOptions& options) {
  using jinja::Dict;
  using jinja::TaintedString;
  using jinja::Value;
  Dict context;
  context.set("messages", messages);
  context.set("add_generation_prompt", Value(add_generation_prompt));
  context.set("bos_token", Value(std::string(bos_text)));
  context.set("eos_token", Value(std::string(eos_text)));
  context.set("tools", tools);
  context.set("documents", Value(jinja::None{}));
  Result<TaintedString> rendered = model_template.render(context, options);
  if (!rendered) return Error{rendered.error()};
  RenderedPrompt out;
  out.text = rendered->text();
  for (const jinja::TaintSpan& span : rendered->taint()) out.message_ranges.push_back({span.begin, span.end});
  return out;
}

ChatTemplate::ChatTemplate(ChatFamily family, std::string bos_text, std::string eos_text,
                           std::string default_system, std::vector<int32_t> stop_ids)
    : family_(family), bos_text_(std::move(bos_text)), eos_text_(std::move(eos_text)),
      default_system_(std::move(default_system)), stop_ids_(std::move(stop_ids)) {}

std::string_view ChatTemplate::family_name() const {
  switch (family_) {
    case ChatFamily::kChatMl: return "chatml";
    case ChatFamily::kGemma: return "gemma";
    case ChatFamily::kLlama2: return "llama2";
    case ChatFamily::kLlama3: return "llama3";
    case ChatFamily::kMistral: return "mistral";
  }
  return "unknown";
}

bool ChatTemplate::writes_bos() const {
  if (model_template_) return !bos_text_.empty() && template_source_.find("bos_token") != std::string::npos;
  return family_ != ChatFamily::kChatMl && !bos_text_.empty();
}

bool ChatTemplate::renders_bos(std::string_view rendered) const {
  return !bos_text_.empty() && rendered.starts_with(bos_text_);
}

std::vector<std::string> ChatTemplate::stop_strings() const {
  switch (family_) {
    case ChatFamily::kChatMl: return {"<|im_end|>"};
    case ChatFamily::kGemma: return {"<end_of_turn>"};
    case ChatFamily::kLlama3: return {"<|eot_id|>"};
    case ChatFamily::kLlama2:
    case ChatFamily::kMistral: break;
  }
  if (eos_text_.empty()) return {};
  return {eos_text_};
}

namespace {
// Builds a RenderedPrompt: template text as is, message text with its range.
struct PromptWriter {
  RenderedPrompt p;
  PromptWriter& tmpl(std::string_view s) {
    p.text.append(s);
    return *this;
  }
  PromptWriter& message(std::string_view s) {
    if (s.empty()) return *this;
    const size_t begin = p.text.size();
    p.text.append(s);
    if (!p.message_ranges.empty() && p.message_ranges.back().end == begin) {
      p.message_ranges.back().end = p.text.size();
    } else {
      p.message_ranges.push_back({begin, p.text.size()});
    }
    return *this;
  }
};
}  // namespace

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  return render_prompt(messages, add_generation_prompt).text;
}

RenderedPrompt ChatTemplate::render_prompt(const std::vector<ChatMessage>& messages,
                                           bool add_generation_prompt) const {
  std::string warning = template_warning_;
  if (model_template_) {
    Result<RenderedPrompt> rendered =
        render_model_template(*model_template_, messages, add_generation_prompt, bos_text_, eos_text_, {});
    if (rendered) return std::move(rendered).value();
    // Either the template raised (Gemma 2's on a system message) or it
    // needs what this interpreter lacks: "could not render" covers both.
    warning = "the model's chat template could not render this conversation (" + rendered.error() +
              "); rendered it in the built-in " +
              std::string(family_name()) + " format instead";
  }
  RenderedPrompt fallback = render_family(messages, add_generation_prompt);
  if (!warning.empty()) fallback.warnings.push_back(std::move(warning));
  return fallback;
}

Result<RenderedPrompt> ChatTemplate::render_with_tools(const std::vector<ChatMessage>& messages,
                                                       std::string_view tools_json) const {
  if (!model_template_ || tool_call_format_ == ToolCallFormat::None) {
    return Error{model_template_ ? "this model's chat template does not offer tools"
                                 : "this model has no usable chat template, so it cannot be offered tools" +
                                       (template_warning_.empty() ? std::string() : " (" + template_warning_ + ")")};
  }
  // No fallback here: the built-in formats cannot show tools, and a prompt
  // that silently lost them would make the model answer without them.
  Result<RenderedPrompt> rendered = render_model_template(*model_template_, messages, /*add_generation_prompt=*/true,
                                                          bos_text_, eos_text_, {}, tools_json);
  if (!rendered) return Error{"the model's chat template could not render this conversation with tools: " + rendered.error()};
  return rendered;
}

RenderedPrompt ChatTemplate::render_family(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  switch (family_) {
    case ChatFamily::kChatMl: return render_chatml(messages, add_generation_prompt);
    case ChatFamily::kGemma: return render_gemma(messages, add_generation_prompt);
    case ChatFamily::kLlama2: return render_llama2(messages);
    case ChatFamily::kLlama3: return render_llama3(messages, add_generation_prompt);
    case ChatFamily::kMistral: return render_mistral(messages);
  }
  return {};
}

RenderedPrompt ChatTemplate::render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  PromptWriter w;
  auto turn = [&w](std::string_view role, std::string_view content, bool from_template) {
    w.tmpl("<|im_start|>");
    if (from_template) {
      w.tmpl(role).tmpl("\n").tmpl(content);
    } else {
      w.message(role).tmpl("\n").message(content);
    }
    w.tmpl("<|im_end|>\n");
  };
  if (!messages.empty() && messages[0].role != "system" && !default_system_.empty())
    turn("system", default_system_, /*from_template=*/true);
  for (const ChatMessage& m : messages) turn(m.role, m.content, /*from_template=*/false);
  if (add_generation_prompt) w.tmpl("<|im_start|>assistant\n");
  return std::move(w.p);
}

RenderedPrompt ChatTemplate::render_gemma(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  // Gemma has no system role: the system text opens the first user turn.
  auto [system, turns] = split_system(messages);
  PromptWriter w;
  w.tmpl(bos_text_);
  for (size_t i = 0; i < turns.size(); ++i) {
    w.tmpl("<start_of_turn>");
    if (turns[i].role == "assistant") w.tmpl("model");
    else w.message(turns[i].role);
    w.tmpl("\n");
    if (i == 0 && !messages.empty() && messages[0].role == "system") w.message(system).tmpl("\n\n");
    w.message(trim(turns[i].content)).tmpl("<end_of_turn>\n");
  }
  if (add_generation_prompt) w.tmpl("<start_of_turn>model\n");
  return std::move(w.p);
}

RenderedPrompt ChatTemplate::render_llama2(const std::vector<ChatMessage>& messages) const {
  // Every user turn opens with BOS; the system block sits inside the first
  // one. There is no generation marker: the reply follows " [/INST]". The
  // reference template trims "<<SYS>>...<</SYS>>\n\n" + content as one
  // string; only its end can be trimmed, so the content is right-trimmed
  // (and, when nothing is left, the block's own "\n\n" goes too).
  auto [system, turns] = split_system(messages);
  const bool has_system = !messages.empty() && messages[0].role == "system";
  PromptWriter w;
  for (size_t i = 0; i < turns.size(); ++i) {
    if (turns[i].role == "user") {
      w.tmpl(bos_text_).tmpl("[INST] ");
      if (i == 0 && has_system) {
        std::string content = turns[i].content;
        content.erase(content.find_last_not_of(" \t\n\r\f\v") + 1);  // npos + 1 == 0: all of it
        w.tmpl("<<SYS>>\n").message(system);
        w.tmpl(content.empty() ? "\n<</SYS>>" : "\n<</SYS>>\n\n").message(content);
      } else {
        w.message(trim(turns[i].content));
      }
      w.tmpl(" [/INST]");
    } else if (turns[i].role == "assistant") {
      w.tmpl(" ").message(trim(turns[i].content)).tmpl(" ").tmpl(eos_text_);
    }
  }
  return std::move(w.p);
}

RenderedPrompt ChatTemplate::render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  PromptWriter w;
  if (!messages.empty()) w.tmpl(bos_text_);
  for (const ChatMessage& m : messages) {
    w.tmpl("<|start_header_id|>").message(m.role).tmpl("<|end_header_id|>\n\n");
    w.message(trim(m.content)).tmpl("<|eot_id|>");
  }
  if (add_generation_prompt) w.tmpl("<|start_header_id|>assistant<|end_header_id|>\n\n");
  return std::move(w.p);
}

RenderedPrompt ChatTemplate::render_mistral(const std::vector<ChatMessage>& messages) const {
  // Mistral Instruct has no system block; the system text is prepended to
  // the first user message.
  auto [system, turns] = split_system(messages);
  const bool has_system = !messages.empty() && messages[0].role == "system";
  PromptWriter w;
  w.tmpl(bos_text_);
  bool first_user = true;
  for (const ChatMessage& m : turns) {
    if (m.role == "user") {
      w.tmpl("[INST] ");
      if (first_user && has_system) w.message(system).tmpl("\n\n");
      first_user = false;
      w.message(m.content).tmpl(" [/INST]");
    } else if (m.role == "assistant") {
      w.message(m.content).tmpl(eos_text_);
    }
  }
  return std::move(w.p);
}

}  // namespace kvscope
