// Ctrl-C as a request, not a kill: while a SigintCounter lives, SIGINT only
// bumps a lock-free counter that the command's loop reads between engine
// steps (or a download reads between chunks), so a stopped reply still
// prints its end, writes its trace, and keeps what it produced. chat,
// generate and fetch-model share it.
//
// Not restarted (no SA_RESTART): a Ctrl-C at chat's prompt must interrupt the
// blocking read so that the loop can quit.
#pragma once

#include <csignal>

namespace kvscope::cli {

// 128 + SIGINT, as shells report a command that Ctrl-C ended.
inline constexpr int kExitInterrupted = 130;

class SigintCounter {
 public:
  // Installs the handler. `second_press_quits`: the second Ctrl-C while it
  // lives ends the program at once, as Ctrl-C would have (for a loop that
  // may sit in one long engine step before it reads the count).
  explicit SigintCounter(bool second_press_quits = false);
  ~SigintCounter();  // puts the previous one back
  SigintCounter(const SigintCounter&) = delete;
  SigintCounter& operator=(const SigintCounter&) = delete;

  // How many times SIGINT arrived since the program started (a loop keeps
  // the count it last saw and compares).
  static int count();

 private:
  struct sigaction previous_ {};
};

}  // namespace kvscope::cli
