// The terminal host: a pod's web terminals, each a login shell on a PTY
// (os/pty_session.hpp) with the pod's environment, so `atlctl` works in it
// with no flags. One reader thread per terminal sends what the shell prints
// to the terminal's sink (the head's relay) in pieces of up to 16 KiB, and
// pauses while more than kTerminalWindow bytes are unacknowledged: a shell
// printing without end cannot flood the control plane or the head. Input
// has the same credit: each keystroke message is answered, once written to
// the shell's terminal (or dropped), with term_inack, and the sink keeps at
// most kTerminalWindow bytes on their way: a paste slows a terminal, never
// its pod.
//
//   (term_open_atom, int64 id, int32 rows, int32 cols, actor sink)
//       -> (int32 code, string line, actor host)   0: open; else the line says why
//   (term_in_atom, int64 id, string bytes)          keystrokes
//   (term_size_atom, int64 id, int32 rows, int32 cols)
//   (term_ack_atom, int64 id, int64 bytes)          the sink has passed these on
//   (term_close_atom, int64 id)                     hang up (the sink is told nothing)
//   (term_env_atom, vector<string> env)             the env of shells opened from now on
// To the sink: (term_out_atom, id, bytes), (term_inack_atom, id, int64 bytes) for
// input taken, then once (term_ended_atom, id, line).
// A sink that goes away (the head, its browser) hangs its terminals up.
#pragma once

#include <caf/fwd.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace atl {

inline constexpr std::int64_t kTerminalWindow = 1 << 20;

struct TerminalHostConfig {
  std::string pod;  // ATL_POD in the shell
  // The shell's environment: this process's, with these "NAME=value" over it.
  std::vector<std::string> env;
};

caf::actor spawn_terminal_host(caf::actor_system& sys, TerminalHostConfig config);

// This process's environment with `over` laid on it (same name: over wins),
// TERM=xterm-256color (the viewer is xterm.js) unless `over` names one;
// sorted by name.
std::vector<std::string> terminal_environment(char** environ_now,
                                              const std::vector<std::string>& over);

}  // namespace atl
