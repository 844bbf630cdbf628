// A process's reports, to whoever owns its stream: a task (the driver's),
// a debug run's command (atlctl run/check/burn), or user code (the
// Supervisor: ranks, the driver, Ray's nodes).
#include "supervisor_state.hpp"

namespace atl::supervisor {

void on_process_started(Actor* self, const ProcessStarted& started) {
  switch (started.stream.kind) {
    case StreamKind::task:
      on_task_started(self, started, started.stream.run);
      return;
    case StreamKind::run:
      on_debug_started(self, started, started.stream);
      return;
    default:
      self->state.sup->process_started(started);
  }
}

void on_process_exit(Actor* self, const ProcessExit& exit) {
  switch (exit.stream.kind) {
    case StreamKind::task:
      on_task_exit(self, exit, exit.stream.run);
      return;
    case StreamKind::run:
      on_debug_exit(self, exit, exit.stream);
      return;
    default:
      self->state.sup->process_ended(exit);
  }
}

}  // namespace atl::supervisor
