// LoadProgress: how Engine::create reports loading a model, and how a front
// end cancels it (a progress bar with a Cancel button on a loading thread).
#pragma once

#include <functional>
#include <string_view>

namespace kvscope {

// Called on the thread running Engine::create with the fraction done so far
// (non-decreasing, 0 to 1, reaching 1 when loading succeeds) and the stage in
// words ("reading model file", "loading tokenizer", "allocating KV pool",
// "repacking weights"). Return false to cancel: create then stops at its next
// report, frees what it built, and returns the error "loading cancelled".
using LoadProgress = std::function<bool(double fraction, std::string_view stage)>;

// The message of the error create returns when LoadProgress returned false.
inline constexpr std::string_view kLoadCancelledMessage = "loading cancelled";

}  // namespace kvscope
