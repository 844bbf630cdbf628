// NodeInfo: what a worker pod says of itself when it joins (its address, the
// machine it runs on, its resources). Plain data; its inspect() for CAF is in
// atl/actors/messages.hpp, so the supervisor's pieces can hold it without CAF.
#pragma once

#include <cstdint>
#include <map>
#include <string>

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

}  // namespace atl
