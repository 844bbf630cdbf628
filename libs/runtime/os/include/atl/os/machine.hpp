// What this machine (container) offers and how it is reached: resources for
// node registration, addresses and interfaces for MASTER_ADDR and NCCL.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "atl/core/expected.hpp"
#include "atl/core/job_spec.hpp"

namespace atl::os {

// CPUs (affinity and cgroup quota), GPUs (/dev/nvidiaN), memory (cgroup limit
// or MemTotal), shared memory (size of /dev/shm).
NodeResources detect_resources();

// Connects to host:port over TCP and returns the local address the connection
// used: the address this node is reached at from there. Doubles as the
// "can this node reach the head" check.
Expected<std::string> local_address_towards(const std::string& host, std::uint16_t port,
                                            std::chrono::milliseconds timeout);

// Name of the interface holding `address` ("lo" for 127.0.0.1), or "" if none.
std::string interface_of_address(const std::string& address);

// Creates and removes a file in `dir`; the error says which step failed.
Status check_writable_dir(const std::string& dir);

std::string host_name();

}  // namespace atl::os
