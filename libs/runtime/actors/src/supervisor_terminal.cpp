// The web terminal's shell in the supervisor: the dashboard's relay asks for
// a terminal into a pod; the TerminalBook says yes or why not, the pod's
// agent starts the shell, and the timeline records who opened it and when it
// closed. The keystrokes and output never pass through here: the relay and
// the pod's terminal host talk directly.
#include "atl/actors/exit_words.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

constexpr auto kOpenTimeout = std::chrono::seconds(10);

using OpenResult = caf::result<std::int32_t, std::string, caf::actor, std::int64_t>;

OpenResult open_terminal(Actor* self, const std::string& pod, const std::string& who,
                         std::int32_t rows, std::int32_t cols, caf::actor sink) {
  auto& st = self->state;
  const caf::actor* joined = st.agent_of(pod);
  auto record = st.terminals.open(pod, joined != nullptr, who, TerminalBook::Clock::now());
  if (!record) return {wire(ReplyCode::refused), record.error(), caf::actor{}, std::int64_t{0}};
  const std::int64_t id = record->id.value;
  auto rp = self->make_response_promise<std::int32_t, std::string, caf::actor, std::int64_t>();
  self->request(*joined, kOpenTimeout, term_open_atom::value, id, rows, cols, std::move(sink))
      .then(
          [self, rp, id, pod, who](std::int32_t code, std::string& line, caf::actor& host) mutable {
            auto& st = self->state;
            if (code != 0 || !host) {
              st.terminals.close(TerminalId{id});
              rp.deliver(wire(ReplyCode::failed),
                         "pod " + pod + " could not start a shell: " + line, caf::actor{},
                         std::int64_t{0});
              return;
            }
            st.controller().record("terminal", "terminal " + std::to_string(id) +
                                                   " opened on pod " + pod + " by " + who);
            rp.deliver(wire(ReplyCode::ok), std::string(), std::move(host), id);
          },
          [self, rp, id, pod](caf::error& err) mutable {
            self->state.terminals.close(TerminalId{id});
            rp.deliver(wire(ReplyCode::failed),
                       "pod " + pod + " did not start a shell: " + error_words(err, self->system()),
                       caf::actor{}, std::int64_t{0});
          });
  return rp;
}

}  // namespace

caf::message_handler terminal_api(Actor* self) {
  return {
      [self](term_open_atom, const std::string& pod, const std::string& who, std::int32_t rows,
             std::int32_t cols, caf::actor& sink) {
        return open_terminal(self, pod, who, rows, cols, std::move(sink));
      },
      // The relay's word that a terminal ended, and why (the browser left,
      // the shell exited, the pod was lost): once in the timeline.
      [self](term_close_atom, std::int64_t id, const std::string& why) {
        auto record = self->state.terminals.close(TerminalId{id});
        if (!record) return;
        self->state.controller().record(
            "terminal",
            "terminal " + std::to_string(id) + " on pod " + record->pod + " closed after " +
                terminal_duration(TerminalBook::Clock::now() - record->opened) + ": " + why);
      },
  };
}

}  // namespace atl::supervisor
