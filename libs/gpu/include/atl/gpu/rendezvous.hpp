// The allreduce rendezvous. Each chosen node's burn process says who it is
// (a hello: its ring address, or its GPUs and, on member 0, the NCCL unique
// id it generated); the supervisor gathers every hello through actor messages
// and answers each member with what it needs to join (the whole ring, or the
// NCCL id with its ranks) or one reason why none may start, such as two
// ranks on one GPU. No CAF here: the plan is a pure function, tested alone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/gpu/hex.hpp"

namespace atl::gpu {

inline constexpr std::string_view kTransportTcp = "tcp";
inline constexpr std::string_view kTransportNccl = "nccl";

struct RendezvousHello {
  int index = 0;  // the member's place: chosen nodes in node order
  std::string pod;
  std::string host;                 // hostname, for messages
  std::string transport;            // "tcp" (no GPU: a ring over TCP) or "nccl"
  std::string address;              // tcp: HOST:PORT this member listens on
  std::vector<std::string> gpus;    // nccl: UUIDs of the GPUs it drives, one rank each
  std::string nccl_id;              // nccl, member 0: the unique id, hex
  std::vector<std::int64_t> sizes;  // the sizes it was asked to reduce
  std::int64_t free_bytes = 0;      // nccl: least free memory over its GPUs; 0: no limit
};

struct RendezvousReply {
  std::string error;                  // set: do not start; the reason names the members
  std::vector<std::string> peers;     // tcp: every member's address, by index
  std::string nccl_id;                // nccl
  int world = 0;                      // ranks in all (tcp: members)
  int first_rank = 0;                 // this member's first rank
  std::vector<std::int64_t> sizes;    // what every member reduces: the sizes that fit everyone
  std::vector<std::int64_t> skipped;  // sizes dropped because some GPU lacks the memory
};

std::string encode_hello(const RendezvousHello& hello);
Expected<RendezvousHello> decode_hello(std::string_view line);
std::string encode_reply(const RendezvousReply& reply);
Expected<RendezvousReply> decode_reply(std::string_view line);

// The supervisor's side, once every member said hello: one reply per member
// (by index), or why the allreduce may not start (mixed transports, a GPU
// driven twice, a missing member or NCCL id, no size that fits).
Expected<std::vector<RendezvousReply>> plan_rendezvous(std::vector<RendezvousHello> hellos);

}  // namespace atl::gpu
