// How the Invariance panel shows a check's input and output as text: prompt
// files split into prompts as `kvscope-cli check --prompts` splits them, and
// one side's continuation as HTML with the first divergent token marked.
// Pure functions, tested by tests/ui/invariance_panel_test.cpp.
#pragma once

#include <string>
#include <vector>

#include <QColor>
#include <QString>

#include "kvscope/invariance_check.h"

namespace kvscope::ui {

// Side a's (or b's) generated text of `verdict` as HTML (spaces and newlines
// kept), the token at first_divergence marked with `mark` as its background
// and `mark_text` as its colour; a side that had already finished there gets
// a marked "[ended: <finish>]" instead. With `token_bytes` (the model's bytes
// per token id, ui::TokenBytesTable) the text is cut at the token's exact
// place; without, at the end of the text the two sides have in common, moved
// back to where the divergent token's own text starts. Identical runs come
// back unmarked.
QString continuationHtml(const PromptVerdict& verdict, bool side_b, const std::vector<std::string>* token_bytes,
                         const QColor& mark, const QColor& mark_text);

// What one side's engine did, so a person can tell whether the setting under
// test was exercised: "40 steps, up to 4 sequences a step, 12 mixed
// prefill+decode, 30 with a cascade pass, 96 prompt tokens from the prefix cache".
QString runStatsText(const InvarianceRunStats& stats);

// The settings of `config` an invariance check is most often about, as
// key=value items B can take ("block_size=16, paged=true, ..., threads=2"),
// so that side A is not just "the settings in force".
QString checkedSettingsText(const EngineConfig& config);

// "identical", "identical tokens (logits differ by 3.1e-06)" or
// "diverges at token 7 (position 42)".
QString verdictText(const PromptVerdict& verdict);

}  // namespace kvscope::ui
