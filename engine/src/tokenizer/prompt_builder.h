// build_prompt: the one place a request's prompt (token ids, raw text or chat
// messages; kvscope/request.h) becomes the ids the engine runs. Engine::submit
// calls it; front ends hand it text or messages and read back what ran
// (SubmittedPrompt), instead of tokenising with a rule of their own.
//
// Tests: tests/engine/runtime/prompt_test.cpp (text, messages and ids give the
// same prompt and the same tokens; BOS once), tests/engine/tokenizer.
#pragma once

#include "kvscope/request.h"
#include "kvscope/result.h"

namespace kvscope {

class ChatTemplate;
class Tokenizer;

// Errors: more than one prompt form set, or an empty prompt. Token ids are
// not range-checked here (the engine checks them against the embedding).
Result<SubmittedPrompt> build_prompt(const GenerationRequest& request, const Tokenizer& tokenizer,
                                     const ChatTemplate& chat_template);

}  // namespace kvscope
