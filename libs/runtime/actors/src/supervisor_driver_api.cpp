// The C API's requests to the JobSupervisor (libatl, the Python package):
// placement groups and tasks (decided by the Supervisor), named actors.
// Decode, call, answer; a promise is made only when the answer waits.
#include "atl/supervisor/status_view.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

// The driver connection that asks (its libatl bridge), numbered once and
// watched: what it made goes when it does (Supervisor::owner_gone).
OwnerId owner(Actor* self) {
  auto sender = caf::actor_cast<caf::actor>(self->current_sender());
  if (!sender) return {};
  auto& owners = self->state.peers.owners;
  if (auto id = owners.find_id(sender)) return *id;
  self->monitor(sender);
  return owners.add(std::move(sender));
}

}  // namespace

caf::message_handler driver_api(Actor* self) {
  return caf::message_handler{
      [self](const GroupRequest& request) -> Result {
        return answer(self->state.sup->create_group(request, owner(self)));
      },
      [self](cluster_atom) { return self->state.sup->cluster_json(); },
      [self](const TaskRequest& request) {
        const OwnerId by = owner(self);
        return now_or_later<TaskResult>(
            self, [&](auto keep) { return self->state.sup->start_task(request, keep, by); });
      },
      [self](disown_atom, bool group, std::int64_t id) -> Result {
        return answer(self->state.sup->disown(group, id, owner(self)));
      },
      [self](actor_reg_atom, const std::string& name, const caf::actor& handle,
             const std::string& owner) -> Result {
        auto& st = self->state;
        const HostId id = st.peers.hosts.add(handle);
        if (auto refused = st.sup->host_actor(name, id, static_cast<bool>(handle), owner)) {
          st.peers.hosts.take(id);
          return answer(refused);
        }
        self->monitor(handle);  // its callers hear at once when it goes
        return answer(std::nullopt);
      },
      [self](actor_list_atom) { return actors_json(*self->state.sup); },
  }
      .or_else(kept<Result, GroupWait, ActorCall>(self))
      .or_else(kept<TaskResult, TaskWait>(self))
      .or_else(at_once<GroupRemove, TaskKill, ActorClose>(self));
}

}  // namespace atl::supervisor
