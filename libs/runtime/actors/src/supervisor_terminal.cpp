// The web terminal's shell in the supervisor: the dashboard's relay asks for
// a terminal into a pod; the Supervisor says yes or why not, the pod's agent
// starts the shell (asked from here, with the relay's sink), the Supervisor
// records it. The keystrokes and output never pass through here: the relay
// and the pod's terminal host talk directly.
#include "atl/actors/exit_words.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

constexpr auto kOpenTimeout = std::chrono::seconds(10);

using OpenResult = caf::result<std::int32_t, std::string, caf::actor, std::int64_t>;

}  // namespace

caf::message_handler terminal_api(Actor* self) {
  return {
      [self](term_open_atom, const std::string& pod, const std::string& who, std::int32_t rows,
             std::int32_t cols, caf::actor& sink) -> OpenResult {
        auto& st = self->state;
        auto opening = st.sup->open_terminal(pod, who);
        if (auto* no = std::get_if<Refusal>(&opening))
          return {wire(no->code), no->text, caf::actor{}, std::int64_t{0}};
        const auto [id, agent] = std::get<TerminalOpening>(opening);
        const caf::actor* to = st.peers.agents.find(agent);
        if (!to) {  // never: the Supervisor knows joined pods' agents only
          st.sup->terminal_started(id, false);
          return {wire(ReplyCode::failed), "pod " + pod + " has no agent", caf::actor{},
                  std::int64_t{0}};
        }
        auto rp =
            self->make_response_promise<std::int32_t, std::string, caf::actor, std::int64_t>();
        auto done = [self, rp, id = id, pod](bool ok, std::string line, caf::actor host) mutable {
          self->state.sup->terminal_started(id, ok);
          if (ok) {
            rp.deliver(wire(ReplyCode::ok), std::string(), std::move(host), id.value);
          } else {
            rp.deliver(wire(ReplyCode::failed), "pod " + pod + line, caf::actor{}, std::int64_t{0});
          }
        };
        self->request(*to, kOpenTimeout, term_open_atom::value, id.value, rows, cols,
                      std::move(sink))
            .then(
                [done](std::int32_t code, std::string& line, caf::actor& host) mutable {
                  const bool ok = code == 0 && host;
                  done(ok, " could not start a shell: " + line, std::move(host));
                },
                [self, done](caf::error& err) mutable {
                  done(false, " did not start a shell: " + error_words(err, self->system()), {});
                });
        return rp;
      },
      // The relay's word that a terminal ended, and why (the browser left,
      // the shell exited, the pod was lost): once in the timeline.
      [self](term_close_atom, std::int64_t id, const std::string& why) {
        self->state.sup->terminal_closed(TerminalId{id}, why);
      },
  };
}

}  // namespace atl::supervisor
