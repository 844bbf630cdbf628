// atlctl taint and atlctl delete: decoded here, decided by the Supervisor
// (the pods' course and the controller's taints).
#include <nlohmann/json.hpp>

#include "supervisor_state.hpp"

namespace atl::supervisor {

// atlctl taint -a list|set|remove [-n NODES|all]: marks on the machines pods
// run on. A bad argument refuses the whole command and changes nothing.
Result taint_nodes(Actor* self, const std::string& action, const std::string& node_text) {
  auto& st = self->state;
  if (action == "list") {
    if (!node_text.empty()) return {wire(ReplyCode::usage), "-n is only for set and remove"};
    return {wire(ReplyCode::ok),
            taints_view(st).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
  }
  if (auto refused = st.sup->change_taints(action, node_text))
    return {wire(refused->code), refused->text};
  return {wire(ReplyCode::ok), std::string()};
}

// atlctl delete -p PODS|all: refused as a whole (nothing deleted) when a pod
// is unknown or not there; else each pod leaves and is recreated.
Result delete_pods(Actor* self, const std::string& spec) {
  if (auto refused = self->state.sup->delete_pods(spec))
    return {wire(refused->code), refused->text};
  return {wire(ReplyCode::ok), std::string()};
}

}  // namespace atl::supervisor
