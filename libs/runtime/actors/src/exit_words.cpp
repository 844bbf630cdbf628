#include "atl/actors/exit_words.hpp"

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/exit_reason.hpp>

namespace atl {

std::string exit_words(const caf::error& reason, caf::actor_system& sys) {
  // CAF's exit reasons share one error category.
  static const auto kExit = caf::make_error(caf::exit_reason::kill).category();
  if (!reason || reason.category() != kExit) return reason ? sys.render(reason) : "it left";
  switch (static_cast<caf::exit_reason>(reason.code())) {
    case caf::exit_reason::normal:
      return "it left";
    case caf::exit_reason::unhandled_exception:
      return "it failed with an exception";
    case caf::exit_reason::unknown:
      return "it ended, no reason known";
    case caf::exit_reason::out_of_workers:
      return "it ran out of workers";
    case caf::exit_reason::user_shutdown:
      return "it was shut down";
    case caf::exit_reason::kill:
      return "it was killed";
    case caf::exit_reason::remote_link_unreachable:
      return "the connection dropped";
    case caf::exit_reason::unreachable:
      return "it became unreachable";
  }
  return sys.render(reason);
}

}  // namespace atl
