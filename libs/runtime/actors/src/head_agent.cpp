#include "atl/actors/head_agent.hpp"

#include <caf/all.hpp>
#include <map>
#include <memory>

#include "atl/actors/dir_check.hpp"
#include "atl/actors/executor.hpp"
#include "atl/actors/exit_words.hpp"
#include "atl/actors/messages.hpp"

namespace atl {

namespace {

struct HeadAgentState {
  HeadAgentConfig config;
  struct Running {
    StreamId stream;
    std::int32_t attempt = 0;
  };
  std::map<caf::actor, Running> executors;
};

using HeadAgent = caf::stateful_actor<HeadAgentState>;

void start(HeadAgent* self, const std::vector<ProcessLaunch>& launches) {
  auto& st = self->state;
  for (const auto& launch : launches) {
    // The driver's $TORCHELASTIC_ERROR_FILE, as a rank's: its exception (or
    // in ray mode the readiness wait's line naming the pods Ray never saw)
    // is the reason the job's end gives.
    std::shared_ptr<ProcessMeter> meter;
    if (launch.stream.kind == StreamKind::driver) {
      meter = std::make_shared<ProcessMeter>();
      meter->error_file = process_tmp_path("atl-error-", st.config.pod, launch, ".json");
    }
    caf::actor exec = spawn_executor(self->system(), launch, st.config.pod, st.config.sink,
                                     st.config.supervisor, nullptr, std::move(meter));
    self->monitor(exec);
    st.executors.emplace(exec, HeadAgentState::Running{launch.stream, launch.attempt});
  }
}

void stop(HeadAgent* self, const StreamId* only, std::int64_t grace_ms) {
  for (const auto& [exec, running] : self->state.executors)
    if (!only || running.stream == *only) self->send(exec, stop_atom::value, grace_ms);
}

caf::behavior head_agent(HeadAgent* self, HeadAgentConfig config) {
  self->state.config = std::move(config);
  self->set_down_handler([self](const caf::down_msg& msg) {
    auto& st = self->state;
    auto it = st.executors.find(caf::actor_cast<caf::actor>(msg.source));
    if (it == st.executors.end()) return;
    // An executor that ended abnormally never reported its process's end:
    // its fate is unknown, so it failed.
    if (msg.reason != caf::exit_reason::normal)
      self->send(st.config.supervisor,
                 ProcessExit{it->second.stream, it->second.attempt, st.config.pod, 255, 0,
                             "its executor ended: " + exit_words(msg.reason, self->system()), ""});
    st.executors.erase(it);
  });
  return {
      [self](const agent_order::Launch& order) { start(self, order.ranks); },
      [self](const agent_order::Run& order) { start(self, order.ranks); },
      [self](const agent_order::StopRanks& order) { stop(self, nullptr, order.grace_ms); },
      [self](const agent_order::StopStream& order) { stop(self, &order.stream, order.grace_ms); },
      // The pre-flight's check of the head pod's working dir (a driver's),
      // on a checker of its own: a hung mount never stalls this agent.
      [self](const PreflightRequest& r) {
        return self->delegate(spawn_dir_checker(self->system()), r);
      },
      [self](const agent_order::Shutdown&) {
        stop(self, nullptr, self->state.config.grace.count());
      },
  };
}

}  // namespace

caf::actor spawn_head_agent(caf::actor_system& sys, HeadAgentConfig config) {
  return sys.spawn(head_agent, std::move(config));
}

}  // namespace atl
