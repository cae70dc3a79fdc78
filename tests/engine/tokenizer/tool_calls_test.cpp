// Tool calls: which format each model template teaches, reading calls back
// out of replies (well-formed, malformed, several, markers left out of the
// text), and what a streaming front end may send before the reply ends.
#include "kvscope/tool_calls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_paths.h"

namespace kvscope {
namespace {

std::string read_template(const std::string& file) {
  std::ifstream in(test::test_data_dir() + "/chat_templates/" + file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ToolCalls, FormatOfEveryModelTemplate) {
  const std::vector<std::pair<std::string, ToolCallFormat>> expected = {
      {"HuggingFaceTB-SmolLM2-135M-Instruct.jinja", ToolCallFormat::None},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::Hermes},
      {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::Hermes},
      {"google-gemma-3-it.jinja", ToolCallFormat::None},
      {"meta-llama-Llama-2-7b-chat.jinja", ToolCallFormat::None},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::Llama3Json},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::Llama3Json},
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFormat::Llama3Json},
      {"microsoft-Phi-3.5-mini-instruct.jinja", ToolCallFormat::None},
      {"mistralai-Mistral-7B-Instruct-v0.2.jinja", ToolCallFormat::None},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::Mistral},
  };
  for (const auto& [file, format] : expected) {
    const std::string source = read_template(file);
    ASSERT_FALSE(source.empty()) << "tests/data/chat_templates/" << file << " is in the tree";
    EXPECT_EQ(detect_tool_call_format(source), format) << file;
  }
}

TEST(ToolCalls, HermesCallsAndTheTextAroundThem) {
  const ParsedReply one = parse_tool_calls(
      ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
  ASSERT_EQ(one.tool_calls.size(), 1u);
  EXPECT_EQ(one.tool_calls[0].name, "get_weather");
  EXPECT_EQ(one.tool_calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_TRUE(one.tool_calls[0].id.empty());
  EXPECT_EQ(one.content, "");

  const ParsedReply two = parse_tool_calls(
      ToolCallFormat::Hermes,
      "Checking both.\n<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n"
      "<tool_call>{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": [1, 2]}\"}</tool_call>");
  ASSERT_EQ(two.tool_calls.size(), 2u);
  EXPECT_EQ(two.tool_calls[0].name, "a");
  EXPECT_EQ(two.tool_calls[0].arguments, "{}");
  EXPECT_EQ(two.tool_calls[1].name, "b");
  EXPECT_EQ(two.tool_calls[1].arguments, "{\"x\":[1,2]}") << "double-encoded arguments are decoded";
  EXPECT_EQ(two.content, "Checking both.");

  // The stop token cut the closing tag: still a call.
  const ParsedReply unclosed =
      parse_tool_calls(ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"n\": 1}}\n");
  ASSERT_EQ(unclosed.tool_calls.size(), 1u);
  EXPECT_EQ(unclosed.tool_calls[0].arguments, "{\"n\":1}");

  // The marker as a token the text left out: the bare call.
  const ParsedReply bare = parse_tool_calls(ToolCallFormat::Hermes, " {\"name\": \"f\", \"arguments\": {}} ");
  ASSERT_EQ(bare.tool_calls.size(), 1u);
}

TEST(ToolCalls, MalformedCallsStayText) {
  const std::vector<std::pair<ToolCallFormat, std::string>> replies = {
      {ToolCallFormat::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>"},
      {ToolCallFormat::Hermes, "<tool_call>{\"arguments\": {}}</tool_call>"},
      {ToolCallFormat::Hermes, "<tool_call>{\"name\": \"\", \"arguments\": {}}</tool_call>"},
      {ToolCallFormat::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>"},
      {ToolCallFormat::Hermes, "I would call <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>oops"},
      {ToolCallFormat::Hermes, "{\"not\": \"a call\"}"},
      {ToolCallFormat::Llama3Json, "{\"name\": \"f\", \"parameters\": "},
      {ToolCallFormat::Llama3Json, "The answer is {\"name\": \"f\", \"parameters\": {}}"},
      {ToolCallFormat::Mistral, "[TOOL_CALLS][{\"name\": \"f\"}, {\"arguments\": {}}]"},
      {ToolCallFormat::Mistral, "[TOOL_CALLS][]"},
      {ToolCallFormat::Mistral, "[1, 2, 3]"},
      {ToolCallFormat::None, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"},
  };
  for (const auto& [format, reply] : replies) {
    const ParsedReply parsed = parse_tool_calls(format, reply);
    EXPECT_TRUE(parsed.tool_calls.empty()) << tool_call_format_name(format) << ": " << reply;
    EXPECT_EQ(parsed.content, reply) << "the words come back unchanged";
  }
}

TEST(ToolCalls, Llama3AndMistral) {
  const ParsedReply llama = parse_tool_calls(
      ToolCallFormat::Llama3Json, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"days\": 2}}");
  ASSERT_EQ(llama.tool_calls.size(), 1u);
  EXPECT_EQ(llama.tool_calls[0].name, "get_weather");
  EXPECT_EQ(llama.tool_calls[0].arguments, "{\"city\":\"Oslo\",\"days\":2}") << "key order as written";

  const ParsedReply mistral = parse_tool_calls(
      ToolCallFormat::Mistral,
      "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}}, {\"name\": \"b\", \"arguments\": {}}]");
  ASSERT_EQ(mistral.tool_calls.size(), 2u);
  EXPECT_EQ(mistral.tool_calls[1].name, "b");
  // [TOOL_CALLS] is a control token the reply's text usually lacks.
  const ParsedReply no_marker = parse_tool_calls(ToolCallFormat::Mistral, "[{\"name\": \"a\", \"arguments\": {}}]");
  EXPECT_EQ(no_marker.tool_calls.size(), 1u);
}

TEST(ToolCalls, StreamablePrefixHoldsBackWhatMayBecomeACall) {
  EXPECT_EQ(streamable_prefix(ToolCallFormat::None, "{\"name\""), 7u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Hermes, "Sure, "), 6u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Hermes, "Sure, <tool"), 6u) << "a marker may be starting";
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Hermes, "Sure, <tool_call>{\"na"), 6u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Hermes, "a < b"), 5u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Hermes, "  {\"name\""), 0u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Llama3Json, "{\"na"), 0u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Llama3Json, "<|pyth"), 0u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Llama3Json, "Hello {"), 7u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Mistral, "[TOOL"), 0u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Mistral, "Paris is"), 8u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::Mistral, ""), 0u);
}

}  // namespace
}  // namespace kvscope
