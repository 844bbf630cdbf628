// The hang watch's shell: the HangCourse (libs/runtime/supervisor) decides
// and sequences; this file hands it the agents' samples, the liveness
// ticks, the stacks its looks ask for and its second-look timer, and
// performs what it returns (HangEffects): the stacks taken from every pod
// (py-spy or gdb, bounded), the timer armed, a flight record kept, the
// controller told. atlctl diagnose's one-off look is here too.
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "atl/core/rank_set.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

// What a node may spend on its ranks' stacks, and what the supervisor waits
// for all of them beyond that.
constexpr auto kStackTimeout = std::chrono::seconds(5);
constexpr auto kDiagnosisSlack = std::chrono::seconds(15);

// Every pod of this attempt takes its ranks' stacks; `done` gets them all
// once every pod answered (or failed to).
// `no_stop`: ranks whose stacks are taken only if that stops nothing.
void gather_stacks(Actor* self, const std::vector<int>& only,
                   std::function<void(std::vector<StackReport>)> done,
                   const std::vector<std::int32_t>& no_stop = {}) {
  auto& st = self->state;
  const auto& rank_pods = st.code.rank_pods();
  std::vector<std::string> pods;
  auto add = [&](const std::string& pod) {
    if (std::find(pods.begin(), pods.end(), pod) == pods.end() && st.pods.registry().joined(pod))
      pods.push_back(pod);
  };
  if (only.empty()) {
    for (const auto& pod : rank_pods) add(pod);
  } else {
    for (int rank : only)
      if (rank >= 0 && static_cast<std::size_t>(rank) < rank_pods.size()) add(rank_pods[rank]);
  }
  struct Gather {
    std::size_t pending = 0;
    std::vector<StackReport> reports;
    std::function<void(std::vector<StackReport>)> done;
  };
  auto g = std::make_shared<Gather>(Gather{pods.size(), {}, std::move(done)});
  if (pods.empty()) {
    g->done({});
    return;
  }
  auto take = [g](std::vector<StackReport> reports) {
    for (auto& r : reports) g->reports.push_back(std::move(r));
    if (--g->pending == 0) g->done(std::move(g->reports));
  };
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(kStackTimeout).count();
  for (const auto& pod : pods)
    self->request(st.pods.registry().at(pod).agent, kStackTimeout + kDiagnosisSlack,
                  diagnose_atom::value, static_cast<std::int64_t>(ms), no_stop)
        .then([take](std::vector<StackReport>& reports) { take(std::move(reports)); },
              [take](const caf::error&) { take({}); });
}

// The course's view of the job now.
HangJob hang_job(const State& st) {
  HangJob job;
  job.spmd_command = st.state() == JobState::command && st.job().mode == JobMode::spmd;
  job.timeout = st.job().hang_timeout;
  job.factor = st.job().hang_factor;
  job.attempt = st.code.attempt();
  job.rank_pods = &st.code.rank_pods();
  return job;
}

// What the course decided, done in its order.
void perform(Actor* self, HangEffects effects) {
  auto& st = self->state;
  for (auto& effect : effects) {
    if (auto* e = std::get_if<hang::Record>(&effect)) {
      st.controller.record("hang", e->text);
    } else if (auto* e = std::get_if<hang::Say>(&effect)) {
      say(st, *e);
    } else if (auto* e = std::get_if<hang::TakeStacks>(&effect)) {
      const std::int32_t round = e->round;
      gather_stacks(
          self, {},
          [self, round](std::vector<StackReport> reports) {
            auto& st = self->state;
            perform(self, st.hang.on_stacks(round, reports, hang_job(st),
                                            std::chrono::steady_clock::now()));
          },
          e->no_stop);
    } else if (auto* e = std::get_if<hang::ArmSecondLook>(&effect)) {
      self->delayed_send(self, e->after, timeout_atom::value,
                         static_cast<std::int32_t>(kSecondLookTimer), e->attempt);
    } else if (auto* e = std::get_if<hang::KeepFile>(&effect)) {
      self->send(st.config.sink, attempt_file_atom::value, e->attempt, std::move(e->name),
                 std::move(e->text));
    } else if (auto* e = std::get_if<hang::Hung>(&effect)) {
      st.controller.on_hung(e->pods, e->reason);
    } else if (auto* e = std::get_if<hang::Straggler>(&effect)) {
      st.controller.on_straggler(e->pod, e->line);
    } else if (std::holds_alternative<hang::Progressed>(effect)) {
      st.controller.on_progress();  // goodput's clock
    }
  }
}

}  // namespace

Result diagnose_now(Actor* self, const std::string& rank_text, bool with_stacks) {
  auto& st = self->state;
  const int world = static_cast<int>(st.code.rank_pods().size());
  if (world == 0)
    return {wire(ReplyCode::refused),
            "job is in state " + std::string(to_string(st.state())) +
                ": no ranks to diagnose (an spmd job's ranks, once started)"};
  std::vector<int> only;
  if (!rank_text.empty() && rank_text != "all") {
    auto ranks = parse_rank_set(rank_text, world);
    if (!ranks) return {wire(ReplyCode::usage), "-r: " + ranks.error()};
    only = std::move(ranks).value();
  }
  auto reply = self->make_response_promise<std::int32_t, std::string>();
  gather_stacks(
      self, only, [self, reply, only, with_stacks](std::vector<StackReport> reports) mutable {
        auto& st = self->state;
        // A pod takes all of its ranks' stacks: only the ranks asked for count.
        if (!only.empty())
          reports.erase(std::remove_if(reports.begin(), reports.end(),
                                       [&](const StackReport& r) {
                                         return !std::binary_search(only.begin(), only.end(),
                                                                    r.rank);
                                       }),
                        reports.end());
        CollectiveDiagnosis records;
        nlohmann::json j = diagnosis_view(st, group_stack_reports(reports, hang_job(st), &records));
        j["collectives"] = {{"findings", records.findings},
                            {"culprits", records.culprits},
                            {"without_record", records.without_record}};
        std::sort(reports.begin(), reports.end(),
                  [](const StackReport& a, const StackReport& b) { return a.rank < b.rank; });
        nlohmann::json ranks = nlohmann::json::array();
        for (const auto& r : reports) {
          if (r.attempt != st.code.attempt()) continue;
          nlohmann::json rj{{"rank", r.rank},
                            {"pod", pod_of_rank(st, r.rank)},
                            {"state", std::string(1, static_cast<char>(r.state))},
                            {"tool", r.tool},
                            {"top", stack_top(parse_stack_report(r))}};
          if (!r.error.empty()) rj["error"] = r.error;
          if (auto c = parse_collectives(r.collectives)) {
            nlohmann::json groups = nlohmann::json::array();
            for (const auto& g : c->groups)
              groups.push_back({{"group", g.id},
                                {"name", g.name},
                                {"op", g.op},
                                {"entered", g.enqueued},
                                {"completed", g.completed}});
            rj["collectives"] = std::move(groups);
            rj["torch"] = c->torch;
          } else if (!r.collectives_error.empty()) {
            rj["collectives_error"] = r.collectives_error;
          }
          if (with_stacks) rj["stack"] = r.text;
          rj["gpus"] = r.gpus;
          ranks.push_back(std::move(rj));
        }
        j["ranks"] = std::move(ranks);
        // Each outlier's pod's GPUs, as its node's watch sees them.
        nlohmann::json outlier_gpus = nlohmann::json::object();
        const auto& outliers = j["outliers"];
        for (const auto& r : reports)
          if (std::find(outliers.begin(), outliers.end(), r.rank) != outliers.end())
            outlier_gpus[pod_of_rank(st, r.rank)] = r.gpus;
        j["outlier_gpus"] = std::move(outlier_gpus);
        reply.deliver(wire(ReplyCode::ok),
                      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      });
  return reply;
}

void on_second_look_timer(Actor* self, std::int32_t attempt) {
  auto& st = self->state;
  perform(self, st.hang.on_second_look(attempt, hang_job(st), std::chrono::steady_clock::now()));
}

void on_progress(Actor* self, const std::string& pod, const std::vector<ProgressReport>& reports) {
  auto& st = self->state;
  perform(self, st.hang.on_progress(pod, reports, hang_job(st), std::chrono::steady_clock::now()));
}

void watch_for_hangs(Actor* self, HangWatch::TimePoint now) {
  auto& st = self->state;
  perform(self, st.hang.on_tick(hang_job(st), now));
}

}  // namespace atl::supervisor
