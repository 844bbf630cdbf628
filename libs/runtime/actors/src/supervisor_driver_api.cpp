// The C API's requests to the JobSupervisor (libatl, the Python package):
// placement groups, tasks, named actors. Decode, call, answer.
#include "supervisor_state.hpp"

namespace atl::supervisor {

caf::message_handler driver_api(Actor* self) {
  return {
      [self](pg_create_atom, const std::string& name, const std::string& strategy,
             const std::string& bundles, std::int64_t timeout_ms) {
        return create_group(self, name, strategy, bundles, timeout_ms);
      },
      [self](pg_wait_atom, std::int64_t id, std::int64_t timeout_ms) {
        return await_group(self, id, timeout_ms);
      },
      [self](pg_remove_atom, std::int64_t id) { return remove_group(self, id); },
      [self](cluster_atom) { return cluster_json(self->state); },
      [self](task_start_atom, std::int64_t group, std::int32_t bundle, const std::string& pod,
             const std::string& command, const std::vector<std::string>& env,
             const std::string& working_dir) {
        return start_task(self, group, bundle, pod, command, env, working_dir);
      },
      [self](task_wait_atom, std::int32_t id, std::int64_t timeout_ms) {
        return await_task(self, id, timeout_ms);
      },
      [self](task_kill_atom, std::int32_t id) { return kill_task(self, id); },
      [self](actor_reg_atom, const std::string& name, const caf::actor& handle,
             const std::string& owner) { return register_actor(self, name, handle, owner); },
      [self](actor_unreg_atom, const std::string& name) { return unregister_actor(self, name); },
      [self](actor_call_atom, const std::string& name, const std::string& request,
             std::int64_t timeout_ms) { return call_actor(self, name, request, timeout_ms); },
      [self](actor_list_atom) { return actors_json(self->state); },
  };
}

}  // namespace atl::supervisor
