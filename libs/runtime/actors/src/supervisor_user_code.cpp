// A process's reports, to whoever owns its stream: a debug run's command
// (atlctl run/check/burn), or the Supervisor (a driver's task, user code:
// ranks, the driver, Ray's nodes).
#include "supervisor_state.hpp"

namespace atl::supervisor {

void on_process_started(Actor* self, const ProcessStarted& started) {
  switch (started.stream.kind) {
    case StreamKind::run:
      on_debug_started(self, started, started.stream);
      return;
    default:
      self->state.sup->process_started(started);
  }
}

void on_process_exit(Actor* self, const ProcessExit& exit) {
  switch (exit.stream.kind) {
    case StreamKind::run:
      on_debug_exit(self, exit, exit.stream);
      return;
    default:
      self->state.sup->process_ended(exit);
  }
}

}  // namespace atl::supervisor
