#include "scheduler/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace kvscope {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

std::string StopMatcher::push(const std::string& text) {
  if (stopped_) return {};
  held_ += text;
  if (stops_.empty()) return std::exchange(held_, {});
  // Earliest complete stop string wins.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest suffix that is a prefix of some stop string.
  size_t keep = 0;
  for (const std::string& s : stops_) {
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() { return std::exchange(held_, {}); }

}  // namespace kvscope
