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

// The local address the kernel routes through towards host:port: the address
// this node is reached at from there. Sends nothing: a raw TCP probe of a CAF
// port confuses its BASP broker (other peers were reported lost).
Expected<std::string> local_address_towards(const std::string& host, std::uint16_t port);

// Name of the interface holding `address` ("lo" for 127.0.0.1), or "" if none.
std::string interface_of_address(const std::string& address);

// Creates and removes a file in `dir`; the error says which step failed.
Status check_writable_dir(const std::string& dir);

std::string host_name();

// GPU device nodes the driver made (/dev/nvidia0, /dev/nvidia1, ...): what a
// pod really has, without CUDA or NVML.
int count_gpu_devices();

// Whether `host` (a name or an address) resolves to an address to bind or reach.
Status check_resolvable(const std::string& host);

// `name` when this host's name is `name` and it resolves, within `within`,
// to `address` (a pod of a StatefulSet behind a headless service, as
// Kubernetes names them: seed 002's MASTER_ADDR is such a name); else empty.
// The lookup runs on a thread of its own: a slow resolver costs `within`.
std::string own_dns_name(const std::string& name, const std::string& address,
                         std::chrono::milliseconds within);

// Shuts down (both ways) every TCP connection of this process to host:port,
// and returns how many there were. For a node that lost its head: CAF 0.17
// keeps a silent connection for its connection-timeout and routes a rejoin
// over it (the same node id), so a rejoin after a network cut waited for
// TCP's retransmission backoff on the dead connection. Once shut, CAF drops
// the connection and the rejoin opens a fresh one.
int shutdown_connections_to(const std::string& host, std::uint16_t port);

}  // namespace atl::os
