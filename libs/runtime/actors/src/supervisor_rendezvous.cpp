// The allreduce rendezvous of `atlctl burn` and `atlctl check`, on the
// supervisor's side. Each chosen node's burn process writes a hello on its
// control channel; its Executor forwards it here as a ProcessNote. Once every
// member of the run said hello, gpu::plan_rendezvous decides (the TCP ring's
// addresses, or the NCCL unique id member 0 generated and each member's
// ranks; or one refusal, e.g. two ranks on one GPU) and each member gets its
// answer through the Executor that forwarded its hello.
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

constexpr std::string_view kHelloVerb = "rendezvous ";

// `reply_for(member)` is what that member hears.
template <class ReplyFor>
void answer_all(Actor* self, DebugRun& run, ReplyFor reply_for) {
  run.rendezvous_answered = true;
  for (auto& [rank, member] : run.hellos)
    self->send(member.executor, control_atom::value, gpu::encode_reply(reply_for(member)));
}

}  // namespace

void abandon_rendezvous(Actor* self, DebugRun& run, const std::string& why) {
  if (run.rendezvous_answered || run.hellos.empty()) return;
  self->state.log->warn("run {}: allreduce rendezvous abandoned: {}", run.id, why);
  gpu::RendezvousReply refusal;
  refusal.error = why;
  answer_all(self, run, [&](const DebugRun::Member&) { return refusal; });
}

void on_process_note(Actor* self, const ProcessNote& note, const caf::actor& executor) {
  auto& st = self->state;
  if (note.stream.kind == StreamKind::task) {
    self->state.sup->task_note(note.stream.run, note.line);
    return;
  }
  const bool of_a_run = note.stream.kind == StreamKind::run;
  DebugRun* live = of_a_run ? st.debug.live(note.stream.run) : nullptr;
  if (!live || !live->ranks.count(note.stream.rank)) {
    st.log->warn("control line from {} of no current run ignored", stream_name(note.stream));
    return;
  }
  DebugRun& run = *live;
  auto answer_one = [&](const std::string& why) {
    gpu::RendezvousReply refusal;
    refusal.error = why;
    self->send(executor, control_atom::value, gpu::encode_reply(refusal));
  };
  if (note.line.rfind(gpu::kFigureVerb, 0) == 0) {
    // A burn's figure: the latest per pod, GPU, metric and size for the
    // metrics; a round's also in the run's series, for the dashboard's charts.
    auto figure = gpu::decode_figure(std::string_view(note.line).substr(gpu::kFigureVerb.size()));
    if (!figure) {
      st.log->warn("{} on {}: {}", stream_name(note.stream), note.pod, figure.error());
      return;
    }
    st.burn_figures[{note.pod, figure->gpu, figure->metric, figure->size}] = figure->value;
    if (figure->round > 0)
      st.debug.add_figure(run.id, {note.pod, figure->gpu, figure->metric, figure->size,
                                   figure->round, figure->value});
    return;
  }
  if (note.line.rfind(kHelloVerb, 0) != 0) {
    st.log->warn("{} on {}: unknown control line ignored", stream_name(note.stream), note.pod);
    return answer_one("the supervisor does not know this request");
  }
  auto hello = gpu::decode_hello(std::string_view(note.line).substr(kHelloVerb.size()));
  if (!hello) return answer_one(hello.error());
  if (run.rendezvous_answered) return answer_one("the allreduce of this run already started");
  hello->pod = note.pod;  // the supervisor's name for it, whatever the process said
  run.hellos[note.stream.rank] = {std::move(*hello), executor};
  for (const auto& [rank, record] : run.ranks) {
    if (record.done && !run.hellos.count(rank))
      return abandon_rendezvous(self, run, record.pod + " ended before joining the allreduce");
  }
  if (run.hellos.size() < run.ranks.size()) return;
  std::vector<gpu::RendezvousHello> hellos;
  for (const auto& [rank, member] : run.hellos) hellos.push_back(member.hello);
  auto plan = gpu::plan_rendezvous(std::move(hellos));
  if (!plan) return abandon_rendezvous(self, run, plan.error());
  st.log->info("run {}: allreduce of {} members starts ({} ranks)", run.id, run.hellos.size(),
               plan->front().world);
  // plan_rendezvous accepted the indices: 0..n-1, each once.
  answer_all(self, run, [&](const DebugRun::Member& m) { return plan->at(m.hello.index); });
}

}  // namespace atl::supervisor
