// A directory's writability checked on a thread of its own: a hung mount
// (NFS, a FUSE filesystem) may block the check for ever, and it must block
// neither the supervisor nor a node agent. The checker is a detached actor
// that answers a PreflightRequest (its working_dir) -> PreflightReply (its
// problem "" when the dir is writable) and ends; ask it with a timeout. One
// whose check never returns ends with the actor system.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

namespace atl {

caf::actor spawn_dir_checker(caf::actor_system& sys);

}  // namespace atl
