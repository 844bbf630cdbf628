// The pre-flight's shell: sends each request the Supervisor's round asks
// for (atl/supervisor/preflight.hpp), with the nodes' timeout, and hands the
// answer back with its round: a round dropped meanwhile (a loss, a restart)
// is gone, so its late answers find nobody.
#include "atl/actors/dir_check.hpp"
#include "atl/actors/exit_words.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

constexpr auto kCheckTimeout = std::chrono::seconds(60);

}  // namespace

void ask_preflight(Actor* self, const effect::Ask& e) {
  auto& st = self->state;
  using Kind = Preflight::Ask::Kind;
  const std::int32_t round = e.round;
  const Preflight::Ask a = e.ask;
  auto answer = [self, round, a](PreflightReply reply) {
    self->state.sup->answer_preflight(round, a, reply);
  };
  auto no_answer = [self, answer](const caf::error& err) {
    answer({error_words(err, self->system()), 0, true});
  };
  if (a.kind == Kind::head_dir) {
    // The head's own check (a driver's working dir) as a request with the
    // nodes' timeout: a hung mount fails the pre-flight, never the supervisor.
    auto checker = spawn_dir_checker(self->system());
    self->request(checker, kCheckTimeout, check_atom::value, st.job().working_dir)
        .then(
            [answer, checker](const std::string& problem) {
              caf::anon_send_exit(checker, caf::exit_reason::user_shutdown);
              answer({problem});
            },
            [checker, no_answer](const caf::error& err) {
              caf::anon_send_exit(checker, caf::exit_reason::user_shutdown);
              no_answer(err);
            });
    return;
  }
  const caf::actor* joined = st.peers.agents.find(e.agent);
  if (!joined) return;  // never: the round asks joined pods only, at once
  const caf::actor& agent = *joined;
  switch (a.kind) {
    case Kind::probe:
      self->request(agent, kCheckTimeout, probe_atom::value)
          .then(
              [answer](std::int32_t port, const std::string& error) {
                answer({error, port});
              },
              no_answer);
      break;
    case Kind::reach:
      self->request(agent, kCheckTimeout, reach_atom::value, a.host, a.port)
          .then([answer](const std::string& problem) { answer({problem}); }, no_answer);
      break;
    case Kind::check:
      self->request(agent, kCheckTimeout, check_atom::value, st.job().working_dir)
          .then([answer](const std::string& problem) { answer({problem}); }, no_answer);
      break;
    case Kind::head_dir:
      break;
  }
}

}  // namespace atl::supervisor
