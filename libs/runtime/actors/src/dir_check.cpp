#include "atl/actors/dir_check.hpp"

#include <caf/all.hpp>
#include <string>

#include "atl/actors/messages.hpp"
#include "atl/os/machine.hpp"

namespace atl {

caf::actor spawn_dir_checker(caf::actor_system& sys) {
  return sys.spawn<caf::detached>([]() -> caf::behavior {
    return {[](check_atom, const std::string& dir) -> std::string {
      auto ok = os::check_writable_dir(dir);
      return ok ? std::string() : ok.error();
    }};
  });
}

}  // namespace atl
