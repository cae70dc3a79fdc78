// StopMatcher: finds user stop strings in streamed text. Text that might be the
// start of a stop string is held back until it is known not to be, so a client
// never sees a stop string or half of one.
#pragma once

#include <string>
#include <vector>

namespace kvscope {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Feeds newly decoded text. Returns the text that is now safe to emit; sets
  // stopped() when a stop string was completed (the text before it is emitted,
  // the stop string and anything after it are dropped).
  std::string push(const std::string& text);
  // The held-back text, at the end of generation.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace kvscope
