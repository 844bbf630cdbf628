// The actor-system configuration every atl process uses: message types, the
// io middleman, and heartbeats (which must be on for *every* node or none).
#pragma once

#include <caf/actor_system_config.hpp>

namespace atl {

class AtlSystemConfig : public caf::actor_system_config {
 public:
  AtlSystemConfig();
};

}  // namespace atl
