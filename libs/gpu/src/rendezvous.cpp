#include "atl/gpu/rendezvous.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "atl/core/quote.hpp"
#include "atl/gpu/burn_types.hpp"

namespace atl::gpu {

using nlohmann::json;

namespace {

Expected<json> parse_object(std::string_view line, const char* what) {
  json j = json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return make_error(std::string("rendezvous ") + what + " is not a JSON object");
  return j;
}

// Integer fields are taken only as integers in range: nlohmann's value<int>()
// converts 1e43 or 2^40 with undefined behaviour (found by fuzzing).
template <class Int>
Int checked_int(const json& j, const char* key, Int fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (!it->is_number_integer()) throw json::type_error::create(302, "not an integer", nullptr);
  if (it->is_number_unsigned()
          ? it->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<Int>::max())
          : (it->get<std::int64_t>() < std::numeric_limits<Int>::min() ||
             it->get<std::int64_t>() > std::numeric_limits<Int>::max()))
    throw json::type_error::create(302, "out of range", nullptr);
  return static_cast<Int>(it->get<std::int64_t>());
}

std::vector<std::int64_t> checked_ints(const json& j, const char* key) {
  std::vector<std::int64_t> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  if (!it->is_array()) throw json::type_error::create(302, "not an array", nullptr);
  for (const auto& v : *it) {
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
      throw json::type_error::create(302, "not an int64", nullptr);
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

}  // namespace

std::string encode_hello(const RendezvousHello& h) {
  json j = {{"index", h.index},         {"pod", h.pod},         {"host", h.host},
            {"transport", h.transport}, {"address", h.address}, {"gpus", h.gpus},
            {"nccl_id", h.nccl_id},     {"sizes", h.sizes},     {"free_bytes", h.free_bytes}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Expected<RendezvousHello> decode_hello(std::string_view line) {
  auto j = parse_object(line, "hello");
  if (!j) return Error{j.error()};
  RendezvousHello h;
  try {
    h.index = checked_int(*j, "index", -1);
    h.pod = j->value("pod", "");
    h.host = j->value("host", "");
    h.transport = j->value("transport", "");
    h.address = j->value("address", "");
    h.gpus = j->value("gpus", std::vector<std::string>{});
    h.nccl_id = j->value("nccl_id", "");
    h.sizes = checked_ints(*j, "sizes");
    h.free_bytes = checked_int(*j, "free_bytes", std::int64_t{0});
  } catch (const json::exception&) {
    return make_error("rendezvous hello has a field of the wrong type");
  }
  if (h.index < 0) return make_error("rendezvous hello has no member index");
  if (h.transport != kTransportTcp && h.transport != kTransportNccl)
    return make_error("rendezvous hello has an unknown transport " + quote(h.transport));
  return h;
}

std::string encode_reply(const RendezvousReply& r) {
  json j = {{"error", r.error},    {"peers", r.peers},           {"nccl_id", r.nccl_id},
            {"world", r.world},    {"first_rank", r.first_rank}, {"sizes", r.sizes},
            {"skipped", r.skipped}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Expected<RendezvousReply> decode_reply(std::string_view line) {
  auto j = parse_object(line, "reply");
  if (!j) return Error{j.error()};
  RendezvousReply r;
  try {
    r.error = j->value("error", "");
    r.peers = j->value("peers", std::vector<std::string>{});
    r.nccl_id = j->value("nccl_id", "");
    r.world = checked_int(*j, "world", 0);
    r.first_rank = checked_int(*j, "first_rank", 0);
    r.sizes = checked_ints(*j, "sizes");
    r.skipped = checked_ints(*j, "skipped");
  } catch (const json::exception&) {
    return make_error("rendezvous reply has a field of the wrong type");
  }
  if (r.error.empty() && (r.world < 1 || r.first_rank < 0 || r.first_rank >= r.world))
    return make_error("rendezvous reply has no valid world and rank");
  return r;
}

Expected<std::vector<RendezvousReply>> plan_rendezvous(std::vector<RendezvousHello> hellos) {
  if (hellos.empty()) return make_error("no member said hello");
  std::sort(hellos.begin(), hellos.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  const int n = static_cast<int>(hellos.size());
  for (int i = 0; i < n; ++i) {
    if (hellos[i].index != i) {
      return make_error(i > 0 && hellos[i].index == hellos[i - 1].index
                            ? "two members claim place " + std::to_string(hellos[i].index)
                            : "member " + std::to_string(i) + " never said hello");
    }
  }
  const auto& first = hellos.front();
  for (const auto& h : hellos) {
    if (h.transport != first.transport) {
      const auto& tcp = h.transport == kTransportTcp ? h : first;
      const auto& nccl = h.transport == kTransportTcp ? first : h;
      return make_error("pods cannot allreduce together: " + tcp.pod +
                        " has no usable GPU (TCP ring) while " + nccl.pod + " would use NCCL");
    }
    if (h.sizes != first.sizes)
      return make_error(h.pod + " was asked for other sizes than " + first.pod);
  }
  std::vector<RendezvousReply> replies(static_cast<size_t>(n));
  // Sizes every member can hold (in-place: one buffer of the size per GPU, plus
  // a tenth for NCCL's own buffers).
  std::int64_t least_free = 0;
  for (const auto& h : hellos)
    if (h.free_bytes > 0 && (least_free == 0 || h.free_bytes < least_free))
      least_free = h.free_bytes;
  std::vector<std::int64_t> sizes, skipped;
  for (std::int64_t s : first.sizes) {
    (least_free == 0 || s + s / 10 <= least_free ? sizes : skipped).push_back(s);
  }
  if (sizes.empty() && !first.sizes.empty()) {
    return make_error("no allreduce size fits: the smallest, " +
                      format_burn_size(first.sizes.front()) + ", needs more than the " +
                      format_burn_size(least_free) + " free on some GPU");
  }
  if (first.transport == kTransportTcp) {
    std::vector<std::string> peers;
    for (const auto& h : hellos) {
      if (h.address.empty()) return make_error(h.pod + " gave no ring address");
      peers.push_back(h.address);
    }
    for (int i = 0; i < n; ++i) replies[i] = {"", peers, "", n, i, sizes, skipped};
    return replies;
  }
  if (first.nccl_id.empty()) return make_error(first.pod + " (member 0) sent no NCCL id");
  // Two ranks on one GPU make NCCL fail late ("Duplicate GPU detected"):
  // refuse up front, naming both holders.
  std::map<std::string, std::string> holder;
  int world = 0;
  for (int i = 0; i < n; ++i) {
    const auto& h = hellos[i];
    if (h.gpus.empty()) return make_error(h.pod + " drives no GPU");
    for (const auto& uuid : h.gpus) {
      auto [it, fresh] = holder.emplace(uuid, h.pod);
      if (!fresh) {
        return make_error("two ranks on one GPU: " + it->second + " and " + h.pod + " both drive " +
                          uuid + (h.host.empty() ? "" : " on host " + h.host) +
                          "; give each pod its own GPUs (or -w pods that do not share)");
      }
    }
    replies[i] = {"", {}, first.nccl_id, 0, world, sizes, skipped};
    world += static_cast<int>(h.gpus.size());
  }
  for (auto& r : replies) r.world = world;
  return replies;
}

}  // namespace atl::gpu
