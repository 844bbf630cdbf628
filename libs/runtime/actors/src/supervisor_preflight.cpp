// The pre-flight's shell: sends what the round (atl/supervisor/preflight.hpp)
// asks for, each request with the nodes' timeout, and feeds the answers back
// to that round only. A round dropped meanwhile (a loss, a restart) is gone
// from the state, so its late answers find nobody.
#include "atl/actors/dir_check.hpp"
#include "atl/actors/exit_words.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

constexpr auto kCheckTimeout = std::chrono::seconds(60);

void ask(Actor* self, std::vector<Preflight::Ask> asks);

// An answer of round `round`: `step` feeds it to the round, if that round is
// still the one under way; its next requests go out, or its verdict is acted on.
template <class Step>
void feed(Actor* self, std::int32_t round, Step step) {
  auto& st = self->state;
  if (!st.preflight || st.preflight->round() != round) return;  // superseded
  ask(self, step(*st.preflight));
}

void ask(Actor* self, std::vector<Preflight::Ask> asks) {
  auto& st = self->state;
  const std::int32_t round = st.preflight->round();
  using Kind = Preflight::Ask::Kind;
  for (const auto& a : asks) {
    auto no_answer = [self, round, a](const caf::error& err) {
      feed(self, round,
           [&](Preflight& p) { return p.unanswered(a, error_words(err, self->system())); });
    };
    if (a.kind == Kind::head_dir) {
      // The head's own check (a driver's working dir) as a request with the
      // nodes' timeout: a hung mount fails the pre-flight, never the supervisor.
      auto checker = spawn_dir_checker(self->system());
      self->request(checker, kCheckTimeout, check_atom::value, st.job().working_dir)
          .then(
              [self, round, checker](const std::string& problem) {
                caf::anon_send_exit(checker, caf::exit_reason::user_shutdown);
                feed(self, round, [&](Preflight& p) { return p.head_dir_checked(problem); });
              },
              [checker, no_answer](const caf::error& err) {
                caf::anon_send_exit(checker, caf::exit_reason::user_shutdown);
                no_answer(err);
              });
      continue;
    }
    const JoinedPod* node = st.pods.registry().find(a.pod);
    if (!node) {  // gone since the round began (its loss drops the round too)
      st.preflight->pod_left(a.pod);
      break;
    }
    const std::string pod = a.pod;
    switch (a.kind) {
      case Kind::probe:
        self->request(node->agent, kCheckTimeout, probe_atom::value)
            .then(
                [self, round, pod](std::int32_t port, const std::string& error) {
                  feed(self, round, [&](Preflight& p) { return p.probed(pod, port, error); });
                },
                no_answer);
        break;
      case Kind::reach:
        self->request(node->agent, kCheckTimeout, reach_atom::value, a.host, a.port)
            .then(
                [self, round, pod](const std::string& problem) {
                  feed(self, round, [&](Preflight& p) { return p.reached(pod, problem); });
                },
                no_answer);
        break;
      case Kind::check:
        self->request(node->agent, kCheckTimeout, check_atom::value, st.job().working_dir)
            .then(
                [self, round, pod](const std::string& problem) {
                  feed(self, round, [&](Preflight& p) { return p.checked(pod, problem); });
                },
                no_answer);
        break;
      case Kind::head_dir:
        break;
    }
  }
  // Each step as it passes, on the head's output (stdout and head.log): a
  // start that says what it checked, not only what failed.
  if (st.preflight)
    for (const auto& line : st.preflight->take_passed()) st.effects->print(line);
  if (st.preflight && st.preflight->done()) {
    Preflight::Verdict verdict = *st.preflight->verdict();
    st.preflight.reset();
    st.controller.on_preflight_verdict(verdict);
  }
}

}  // namespace

void preflight(Actor* self) {
  auto& st = self->state;
  Preflight::Plan plan;
  for (const auto& pod : st.active()) plan.active.push_back(st.pods.registry().at(pod).info);
  plan.spec = st.job().node_spec;
  if (st.job().mode == JobMode::driver && !st.job().working_dir.empty())
    plan.head = head_pod_name(st.job().job_id);
  st.preflight.emplace(++st.check_round, std::move(plan));
  ask(self, st.preflight->start());
}

}  // namespace atl::supervisor
