// Why an actor of another process ended, in words an operator reads (the
// timeline, `job failed: ...`): "the connection dropped", not CAF's
// "exit_reason(remote_link_unreachable)". Anything that is not one of CAF's
// exit reasons is rendered as CAF renders it.
#pragma once

#include <caf/fwd.hpp>
#include <string>

namespace atl {

std::string exit_words(const caf::error& reason, caf::actor_system& sys);

// Why a request failed, in words an operator reads: "it timed out",
// "it is gone (its process ended or the connection dropped)", never CAF's
// "system_error(request_timeout)". An exit reason as exit_words says it;
// anything else in CAF's words without its wrapping.
std::string error_words(const caf::error& error, caf::actor_system& sys);

}  // namespace atl
