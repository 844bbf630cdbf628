#include "atl/actors/terminal_host.hpp"

#include <unistd.h>

#include <caf/all.hpp>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "atl/actors/messages.hpp"
#include "atl/os/logging.hpp"
#include "atl/os/pty_session.hpp"

extern char** environ;

namespace atl {

namespace {

// What the reader thread and the actor share of one terminal.
struct Flow {
  std::mutex mutex;
  std::condition_variable cv;
  std::int64_t unacked = 0;
  bool stopping = false;
};

struct Terminal {
  std::unique_ptr<os::PtySession> pty;
  std::shared_ptr<Flow> flow;
  std::thread reader;
  caf::actor sink;
};

// The reader thread's word that the shell left its terminal (internal).
using term_gone_atom = caf::atom_constant<caf::atom("term_gone")>;

struct TerminalHostState {
  TerminalHostConfig config;
  std::map<std::int64_t, Terminal> terminals;
  // The node ends: every shell is told at once, then each is waited for
  // (20 terminals close in one grace, not twenty).
  ~TerminalHostState() {
    for (auto& [id, t] : terminals) begin_stop(t);
    for (auto& [id, t] : terminals) finish_stop(t);
  }
  static void stop(Terminal& t) {
    begin_stop(t);
    finish_stop(t);
  }
  static void begin_stop(Terminal& t) {
    {
      std::lock_guard<std::mutex> lock(t.flow->mutex);
      t.flow->stopping = true;
    }
    t.flow->cv.notify_all();
    t.pty->wake();
    t.pty->signal_hang_up();
  }
  static void finish_stop(Terminal& t) {
    t.pty->hang_up(200);
    if (t.reader.joinable()) t.reader.join();
  }
};

using HostActor = caf::stateful_actor<TerminalHostState>;

void reader_loop(os::PtySession* pty, std::shared_ptr<Flow> flow, caf::actor sink, caf::actor host,
                 std::int64_t id) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(flow->mutex);
      flow->cv.wait(lock, [&] { return flow->stopping || flow->unacked < kTerminalWindow; });
      if (flow->stopping) return;
    }
    auto got = pty->read(16 * 1024, -1);
    {
      std::lock_guard<std::mutex> lock(flow->mutex);
      if (flow->stopping) return;
    }
    if (!got) {
      caf::anon_send(host, term_gone_atom::value, id);
      return;
    }
    if (got->empty()) continue;
    {
      std::lock_guard<std::mutex> lock(flow->mutex);
      flow->unacked += static_cast<std::int64_t>(got->size());
    }
    caf::anon_send(sink, term_out_atom::value, id, std::move(*got));
  }
}

// $PATH, with this executable's directory at its end unless it is in it.
std::string path_with_own_dir(const char* path_env) {
  std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return path;
  std::string dir(exe, static_cast<std::size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  if (dir.empty() || (":" + path + ":").find(":" + dir + ":") != std::string::npos) return path;
  return path.empty() ? dir : path + ":" + dir;
}

caf::behavior terminal_host(HostActor* self, TerminalHostConfig config) {
  self->state.config = std::move(config);
  // The node agent that spawned it ends, normally or not: so do its shells.
  self->set_exit_handler([self](caf::exit_msg& msg) { self->quit(msg.reason); });
  self->set_down_handler([self](const caf::down_msg& down) {
    auto& terms = self->state.terminals;
    for (auto it = terms.begin(); it != terms.end();) {
      if (it->second.sink.address() == down.source) {
        component_logger("node")->info("web terminal {} closed: its viewer went away", it->first);
        TerminalHostState::stop(it->second);
        it = terms.erase(it);
      } else {
        ++it;
      }
    }
  });
  return {
      [self](term_open_atom, std::int64_t id, std::int32_t rows, std::int32_t cols,
             caf::actor sink) -> caf::result<std::int32_t, std::string, caf::actor> {
        auto& st = self->state;
        if (!sink) return {std::int32_t{1}, std::string("a terminal needs a viewer"), caf::actor{}};
        if (st.terminals.count(id))
          return {std::int32_t{1}, "terminal " + std::to_string(id) + " is open already",
                  caf::actor{}};
        os::PtyOptions options;
        os::use_shell(options, std::getenv("SHELL"));
        auto over = st.config.env;
        over.push_back("ATL_POD=" + st.config.pod);
        // atlctl comes with workernode: the shell finds it even when the
        // image's PATH does not name their directory.
        over.push_back("PATH=" + path_with_own_dir(std::getenv("PATH")));
        options.env = terminal_environment(environ, over);
        if (const char* home = std::getenv("HOME")) options.cwd = home;
        options.rows = rows;
        options.cols = cols;
        auto pty = os::PtySession::start(options);
        if (!pty) return {std::int32_t{1}, pty.error(), caf::actor{}};
        Terminal t;
        t.pty = std::move(pty).value();
        t.flow = std::make_shared<Flow>();
        t.sink = sink;
        t.reader = std::thread(reader_loop, t.pty.get(), t.flow, sink,
                               caf::actor_cast<caf::actor>(self), id);
        self->monitor(sink);
        component_logger("node")->info("web terminal {} opened: {} (pid {})", id, options.program,
                                       t.pty->pid());
        st.terminals.emplace(id, std::move(t));
        return {std::int32_t{0}, std::string(), caf::actor_cast<caf::actor>(self)};
      },
      [self](term_in_atom, std::int64_t id, const std::string& bytes) {
        auto it = self->state.terminals.find(id);
        if (it == self->state.terminals.end()) return;
        if (auto ok = it->second.pty->write(bytes); !ok)
          self->send(it->second.sink, term_out_atom::value, id,
                     "\r\n[atl: " + ok.error() + "]\r\n");
        // Input's credit, as output's: the relay keeps at most
        // kTerminalWindow bytes on their way here (a paste of 420 MB grew
        // this pod by 410 MB, and cost two pods their heartbeats).
        self->send(it->second.sink, term_inack_atom::value, id,
                   static_cast<std::int64_t>(bytes.size()));
      },
      [self](term_env_atom, std::vector<std::string>& env) {
        self->state.config.env = std::move(env);
      },
      [self](term_size_atom, std::int64_t id, std::int32_t rows, std::int32_t cols) {
        auto it = self->state.terminals.find(id);
        if (it != self->state.terminals.end()) (void)it->second.pty->resize(rows, cols);
      },
      [self](term_ack_atom, std::int64_t id, std::int64_t bytes) {
        auto it = self->state.terminals.find(id);
        if (it == self->state.terminals.end()) return;
        auto& flow = *it->second.flow;
        {
          std::lock_guard<std::mutex> lock(flow.mutex);
          flow.unacked = std::max<std::int64_t>(0, flow.unacked - bytes);
        }
        flow.cv.notify_all();
      },
      [self](term_close_atom, std::int64_t id) {
        auto it = self->state.terminals.find(id);
        if (it == self->state.terminals.end()) return;
        TerminalHostState::stop(it->second);
        self->state.terminals.erase(it);
      },
      [self](term_gone_atom, std::int64_t id) {
        auto it = self->state.terminals.find(id);
        if (it == self->state.terminals.end()) return;
        auto status = it->second.pty->wait();
        if (it->second.reader.joinable()) it->second.reader.join();
        self->send(it->second.sink, term_ended_atom::value, id, "the shell " + status.ended());
        self->demonitor(it->second.sink);
        self->state.terminals.erase(it);
      },
  };
}

}  // namespace

std::vector<std::string> terminal_environment(char** environ_now,
                                              const std::vector<std::string>& over) {
  std::map<std::string, std::string> env;
  auto put = [&env](const std::string& kv) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  };
  for (char** e = environ_now; e && *e; ++e) put(*e);
  env["TERM"] = "xterm-256color";  // the viewer is xterm.js, whatever ran this process
  for (const auto& kv : over) put(kv);
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

caf::actor spawn_terminal_host(caf::actor_system& sys, TerminalHostConfig config) {
  // Detached: starting a shell, hanging one up and joining its reader may
  // take a moment, never on the scheduler's threads.
  return sys.spawn<caf::detached>(terminal_host, std::move(config));
}

}  // namespace atl
