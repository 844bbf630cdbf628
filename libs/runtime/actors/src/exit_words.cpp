#include "atl/actors/exit_words.hpp"

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>

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

std::string error_words(const caf::error& error, caf::actor_system& sys) {
  if (!error) return "no error";
  static const auto kExit = caf::make_error(caf::exit_reason::kill).category();
  static const auto kSec = caf::make_error(caf::sec::request_timeout).category();
  if (error.category() == kExit) return exit_words(error, sys);
  if (error.category() == kSec) {
    switch (static_cast<caf::sec>(error.code())) {
      case caf::sec::request_timeout:
        return "it timed out";
      case caf::sec::request_receiver_down:
        return "it is gone (its process ended or the connection dropped)";
      case caf::sec::unexpected_message:
      case caf::sec::unexpected_response:
        return "it did not understand the request (another atl version?)";
      case caf::sec::no_route_to_receiving_node:
        return "its node is not connected";
      case caf::sec::cannot_connect_to_node:
        return "nothing answers there";
      case caf::sec::cannot_open_port:
        return "the port is taken (or not this user's to use)";
      case caf::sec::disconnect_during_handshake:
        return "the connection dropped while it was being set up";
      default:
        break;
    }
  }
  // Anything else in CAF's words, without its wrapping (system_error(...)).
  std::string text = sys.render(error);
  const auto open = text.find('('), close = text.rfind(')');
  if (open != std::string::npos && close != std::string::npos && close > open &&
      text.rfind("system_error(", 0) == 0)
    text = text.substr(open + 1, close - open - 1);
  return text;
}

}  // namespace atl
