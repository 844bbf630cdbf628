#include "atl/actors/fake_executor.hpp"

#include <caf/all.hpp>
#include <sstream>

namespace atl {

FakeRun fake_run_of(const std::string& command) {
  std::istringstream in(command);
  std::string word;
  in >> word;
  if (word == "true" || word == ":") return {0, ""};
  if (word == "false") return {1, ""};
  if (word == "exit") {
    std::string code;
    in >> code;
    int n = 0;
    for (char c : code) {
      if (c < '0' || c > '9' || n > 255) return {2, "exit: " + code + ": bad number\n"};
      n = n * 10 + (c - '0');
    }
    return {code.empty() ? 0 : n & 255, ""};
  }
  if (word == "seq") {
    std::string count, extra;
    in >> count >> extra;
    std::int64_t n = 0;
    bool ok = !count.empty() && count.size() <= 9 && extra.empty();
    for (char c : count) ok = ok && c >= '0' && c <= '9';
    if (!ok) {
      auto rest = command.substr(command.find("seq") + 3);
      rest.erase(0, rest.find_first_not_of(' '));
      return {1, "seq: expected one count from 0 to 999999999, got '" + rest + "'\n"};
    }
    for (char c : count) n = n * 10 + (c - '0');
    return {0, "", n};
  }
  if (word == "echo") {
    std::string rest;
    std::getline(in, rest);
    auto first = rest.find_first_not_of(' ');
    return {0, (first == std::string::npos ? "" : rest.substr(first)) + "\n"};
  }
  return {std::nullopt, "[fake rank] " + command + "\n"};
}

namespace {

struct FakeState {
  ProcessLaunch launch;
  std::string pod;
  caf::actor report_to;
  std::optional<int> pending_exit;  // sent once the sink acked the output
  bool awaiting_ack = false;
  bool done = false;
  std::int64_t next_line = 1, last_line = 0;  // seq N: the lines still to print
};

constexpr std::size_t kChunkBytes = 64 * 1024;

// seq's next chunk of lines to the sink; false when all are out.
bool send_next_lines(caf::stateful_actor<FakeState>* self, const caf::actor& sink) {
  auto& st = self->state;
  if (st.next_line > st.last_line) return false;
  std::string chunk;
  std::int32_t lines = 0;
  while (st.next_line <= st.last_line && chunk.size() < kChunkBytes) {
    chunk += std::to_string(st.next_line++);
    chunk += '\n';
    ++lines;
  }
  st.awaiting_ack = true;
  self->send(sink, log_atom::value, st.launch.stream, std::move(chunk), lines);
  return true;
}

void finish(caf::stateful_actor<FakeState>* self, int code, int signal) {
  auto& st = self->state;
  if (st.done) return;
  if (st.awaiting_ack) {  // its lines first, as an Executor does
    st.pending_exit = signal ? -signal : code;
    return;
  }
  st.done = true;
  self->send(st.report_to,
             ProcessExit{st.launch.stream, st.launch.attempt, st.pod, code, signal, "", ""});
  self->quit();
}

caf::behavior fake_executor(caf::stateful_actor<FakeState>* self, ProcessLaunch launch,
                            std::string pod, caf::actor sink, caf::actor report_to) {
  auto& st = self->state;
  st.launch = std::move(launch);
  st.pod = std::move(pod);
  st.report_to = std::move(report_to);
  FakeRun run = fake_run_of(st.launch.command);
  self->send(st.report_to, ProcessStarted{st.launch.stream, st.launch.attempt, st.pod, 0});
  st.last_line = run.seq_to;
  if (!run.output.empty()) {
    st.awaiting_ack = true;
    self->send(sink, log_atom::value, st.launch.stream, run.output, std::int32_t{1});
  } else {
    send_next_lines(self, sink);
  }
  if (run.exit_code) finish(self, *run.exit_code, 0);
  return {
      [self, sink](ack_atom) {
        auto& st = self->state;
        st.awaiting_ack = false;
        if (send_next_lines(self, sink)) return;
        if (st.pending_exit) {
          int v = *st.pending_exit;
          finish(self, v < 0 ? 0 : v, v < 0 ? -v : 0);
        }
      },
      [self](stop_atom, std::int64_t) {
        self->state.last_line = 0;  // a stopped rank prints nothing more
        finish(self, 0, 15);
      },
      [](control_atom, const std::string&) {},  // no control channel
  };
}

}  // namespace

caf::actor spawn_fake_executor(caf::actor_system& sys, ProcessLaunch launch, std::string pod,
                               caf::actor sink, caf::actor report_to) {
  return sys.spawn(fake_executor, std::move(launch), std::move(pod), std::move(sink),
                   std::move(report_to));
}

}  // namespace atl
