// NodeInfo: what a worker pod says of itself when it joins (its address, the
// machine it runs on, its resources), and JoinTerms: the head's answer. Plain
// data; their inspect() for CAF is in atl/actors/messages.hpp, so the
// supervisor's pieces can hold them without CAF.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "atl/core/log_stream.hpp"

namespace atl {

struct NodeInfo {
  std::string pod;
  std::string address;    // how other nodes reach it (MASTER_ADDR)
  std::string interface;  // network interface of `address`
  std::string machine;    // the node it runs on (taints mark nodes; JSON "node")
  std::int32_t cpus = 0;
  std::int32_t gpus = 0;
  std::int64_t memory = 0;
  std::int64_t shm = 0;
  // Custom resources (workernode --resources), in 1/10000 units (core/resources.hpp).
  std::map<std::string, std::int64_t> resources;
  // A name other pods reach it by (its pod name, where names resolve:
  // Kubernetes' headless services); empty: none, use `address`. Seed 002's
  // MASTER_ADDR is such a name when the master's pod has one.
  std::string dns_name;
};

// The head's answer to a pod that asks to join (Supervisor::join): refused
// (one line; `retry`: for now, a restart under way: ask again) or joined,
// with the heartbeats it is to keep and its own log lines' stream
// (logs/pod-worker-<i>.log). On the wire with the log sink's handle (JoinReply).
struct JoinTerms {
  std::string refusal;  // empty: joined
  bool retry = false;
  std::int64_t heartbeat_interval_ms = 0;
  std::int64_t heartbeat_timeout_ms = 0;
  StreamId log_stream;
  bool joined() const { return refusal.empty(); }
};

}  // namespace atl
