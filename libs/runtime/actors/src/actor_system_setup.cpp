#include "atl/actors/actor_system_setup.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "atl/actors/messages.hpp"

namespace atl {

AtlSystemConfig::AtlSystemConfig() {
  load<caf::io::middleman>();
  add_message_type<NodeInfo>("atl::NodeInfo");
  add_message_type<RankLaunch>("atl::RankLaunch");
  add_message_type<RankExit>("atl::RankExit");
  add_message_type<RankStarted>("atl::RankStarted");
  add_message_type<RankNote>("atl::RankNote");
  // A shared queue with blocking workers: work stealing polls while idle, and
  // on the 2-core pods of small jobs that polling competes with the ranks.
  set("scheduler.policy", caf::atom("sharing"));
  // Without heartbeats a frozen or partitioned peer is never reported down.
  set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds(1)});
  set("middleman.connection-timeout", caf::timespan{std::chrono::seconds(20)});
}

}  // namespace atl
