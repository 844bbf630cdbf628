#include "atl/actors/dir_check.hpp"

#include <caf/all.hpp>
#include <string>

#include "atl/actors/messages.hpp"
#include "atl/os/machine.hpp"

namespace atl {

caf::actor spawn_dir_checker(caf::actor_system& sys) {
  // One check, then it ends (its asker may also end it sooner).
  return sys.spawn<caf::detached>([](caf::event_based_actor* self) -> caf::behavior {
    return {[self](const PreflightRequest& r) {
      auto ok = os::check_writable_dir(r.working_dir);
      self->quit();
      return PreflightReply{ok ? std::string() : ok.error()};
    }};
  });
}

}  // namespace atl
