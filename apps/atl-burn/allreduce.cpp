// atl-burn allreduce: this node's part of an allreduce burn or check.
//   --local       NCCL among this node's GPUs, all ranks in this process.
//   (supervised)  started by the node agent with a control channel: say hello
//                 to the supervisor (gpu/rendezvous.hpp), get the plan, then
//                 NCCL with one rank per GPU over every member, or a TCP ring
//                 when the members have no GPU.
//   --peers       by hand, without a supervisor: a TCP ring over the given list.
// Rounds run over every size until the duration is over (member 0's clock
// decides for all); the master prints the seed's round line per size; every
// element of every round is checked against the exact sum.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <type_traits>

#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/metrics.hpp"
#include "atl/gpu/nccl_allreduce.hpp"
#include "atl/gpu/rendezvous.hpp"
#include "atl/gpu/ring_allreduce.hpp"
#include "atl/os/control_channel.hpp"
#include "burn.hpp"

namespace atl::burn {

namespace {

// The two transports behind one face for the round loop.
struct Reducer {
  virtual ~Reducer() = default;
  virtual int world() const = 0;
  // NCCL measures both ways (nccl-tests' out-of-place and in-place
  // columns); the TCP ring has one way.
  virtual bool has_in_place() const = 0;
  virtual Expected<gpu::AllreduceRound> allreduce(std::int64_t bytes, int round,
                                                  const gpu::AllreduceOptions& options) = 0;
  virtual Expected<bool> agree(bool decision) = 0;
};

int world_of(const gpu::TcpRing& ring) { return ring.size(); }
int world_of(const gpu::NcclAllreduce& nccl) { return nccl.world(); }
Expected<gpu::AllreduceRound> reduce(gpu::TcpRing& ring, std::int64_t bytes, int round,
                                     const gpu::AllreduceOptions&) {
  return ring.allreduce(bytes, round);  // one exchange, host-timed
}
Expected<gpu::AllreduceRound> reduce(gpu::NcclAllreduce& nccl, std::int64_t bytes, int round,
                                     const gpu::AllreduceOptions& options) {
  return nccl.allreduce(bytes, round, options);
}

template <class Impl>
struct ReducerOf : Reducer {
  explicit ReducerOf(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
  int world() const override { return world_of(*impl); }
  bool has_in_place() const override { return std::is_same_v<Impl, gpu::NcclAllreduce>; }
  Expected<gpu::AllreduceRound> allreduce(std::int64_t bytes, int round,
                                          const gpu::AllreduceOptions& options) override {
    return reduce(*impl, bytes, round, options);
  }
  Expected<bool> agree(bool decision) override { return impl->agree(decision); }
  std::unique_ptr<Impl> impl;
};
using TcpReducer = ReducerOf<gpu::TcpRing>;
using NcclReducer = ReducerOf<gpu::NcclAllreduce>;

int fail(const Options& o, const std::string& why) {
  std::printf("%s: allreduce FAIL: %s\n", o.pod.c_str(), why.c_str());
  return 1;
}

std::string size_list(const std::vector<std::int64_t>& sizes) {
  std::string out;
  for (auto s : sizes) out += (out.empty() ? "" : ",") + gpu::format_burn_size(s);
  return out;
}

std::vector<int> all_devices(const gpu::Backend& backend) {
  std::vector<int> devices;
  for (int d = 0; d < backend.device_count(); ++d) devices.push_back(d);
  return devices;
}

// Rounds over every size until member 0 says stop. Each size: NCCL's
// warm-up and timed window out of place, then in place; the seed's round
// line carries the out-of-place figures, a line after it both ways with
// their #wrong.
int run_rounds(Reducer& reducer, const Options& o, const std::vector<std::int64_t>& sizes,
               bool is_master, const std::string& what) {
  const int n = reducer.world();
  auto t0 = Clock::now();
  int round = 0;
  std::int64_t wrong = 0;
  std::string problem;
  // The longest one size may take: both windows, each under NCCL's own
  // watchdog of o.timeout per wait.
  const Millis size_limit = 3 * o.timeout + kDeadlineGrace;
  gpu::AllreduceOptions out_of_place{o.warmup_iterations, o.iterations, false};
  gpu::AllreduceOptions in_place{o.warmup_iterations, o.iterations, true};
  // One verified round that is not printed: NCCL connects its channels on
  // first use, which no bandwidth figure should include.
  if (!sizes.empty()) {
    gpu::PhaseMonitor::Scope phase(monitor(), -1, "the allreduce warm-up", size_limit);
    auto warm = reducer.allreduce(sizes.front(), 0, {0, 1, true});
    if (!warm)
      problem = warm.error();
    else if (warm->wrong)
      problem = std::to_string(warm->wrong) + " wrong elements (#wrong) in the warm-up";
    if (warm) wrong += warm->wrong;
  }
  while (problem.empty()) {
    Expected<bool> more = make_error("not asked");
    {
      gpu::PhaseMonitor::Scope phase(monitor(), -1, "agreeing on another round", size_limit);
      more = reducer.agree(round == 0 || Clock::now() - t0 < o.duration);
    }
    if (!more) {
      problem = more.error();
      break;
    }
    if (!*more) break;
    ++round;
    for (std::int64_t bytes : sizes) {
      const std::string label = gpu::format_burn_size(bytes);
      gpu::PhaseMonitor::Scope phase(monitor(), -1, "the allreduce of " + label, size_limit);
      auto r = reducer.allreduce(bytes, round, out_of_place);
      if (!r) {
        problem = r.error();
        break;
      }
      Expected<gpu::AllreduceRound> r2 = make_error("no in-place run");
      if (reducer.has_in_place()) {
        r2 = reducer.allreduce(bytes, round, in_place);
        if (!r2) {
          problem = r2.error();
          break;
        }
        wrong += r2->wrong;
      }
      wrong += r->wrong;
      const auto figures = gpu::allreduce_figures(bytes, r->seconds, n);
      if (is_master && !figures.measured) {
        std::printf("Round %d: Size=%s: %s\n", round, label.c_str(), figures.note.c_str());
      } else if (is_master) {
        const double busbw = figures.busbw;
        std::printf(
            "%s\n",
            gpu::format_allreduce_round(round, bytes, busbw, figures.algbw, o.master).c_str());
        if (r2) {
          std::printf(
              "Round %d: Size=%s out-of-place %.3f ms BusBW=%.2f GB/s #wrong %lld, in-place %.3f "
              "ms BusBW=%.2f GB/s #wrong %lld (%d timed after %d warm-up, %d ranks)\n",
              round, label.c_str(), r->seconds * 1e3, busbw, static_cast<long long>(r->wrong),
              r2->seconds * 1e3, gpu::allreduce_busbw_gbps(bytes, r2->seconds, n),
              static_cast<long long>(r2->wrong), o.iterations, o.warmup_iterations, n);
        }
        std::fflush(stdout);
        report_figure(0, "allreduce_busbw_gbps", busbw, label, round);
      }
      const std::int64_t bad = r->wrong + (r2 ? r2->wrong : 0);
      if (bad) problem = std::to_string(bad) + " wrong elements (#wrong) at " + label;
    }
  }
  std::printf("%s: allreduce %s, %d rounds, #wrong %lld: %s%s\n", o.pod.c_str(), what.c_str(),
              round, static_cast<long long>(wrong),
              problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
  return problem.empty() ? 0 : 1;
}

// Says hello on the control channel and waits for the supervisor's plan.
Expected<gpu::RendezvousReply> rendezvous(int fd, const gpu::RendezvousHello& hello,
                                          Millis timeout) {
  if (auto sent = os::write_line(fd, "rendezvous " + gpu::encode_hello(hello)); !sent)
    return Error{sent.error()};
  os::LineReader reader(fd);
  std::string line;
  switch (reader.read(line, timeout)) {
    case os::LineReader::Result::line:
      break;
    case os::LineReader::Result::timeout:
      return make_error("the other members did not join within " + format_duration(timeout));
    default:
      return make_error("the supervisor's control channel closed");
  }
  auto reply = gpu::decode_reply(line);
  if (!reply) return Error{reply.error()};
  if (!reply->error.empty()) return make_error(reply->error);
  return reply;
}

}  // namespace

int burn_allreduce(gpu::Backend& backend, const Options& o) {
  const bool use_nccl = backend.name() == "cuda" && gpu::nccl_compiled_in();
  if (o.local && backend.name() != "cuda")
    return fail(o, "a local allreduce runs among a node's GPUs, and CUDA sees none here");
  if (o.local && !use_nccl) return fail(o, "this build of atl has no NCCL");
  std::vector<std::int64_t> sizes = o.sizes;
  if (sizes.empty()) {
    // The seed's sizes on GPUs; modest ones over TCP between CPU nodes.
    sizes = use_nccl ? gpu::allreduce_sizes(INT64_MAX)
                     : std::vector<std::int64_t>{8LL << 20, 32LL << 20};
  }
  if (backend.name() == "cuda" && !use_nccl) {
    std::printf("%s: this build of atl has no NCCL: the GPUs are left out, a TCP ring runs\n",
                o.pod.c_str());
  }
  auto control = os::control_fd_from_environment();
  if (!o.local && !control) {
    // By hand: the ring as given.
    if (o.peers.size() < 2) {
      std::printf("%s: allreduce over 1 node: nothing to exchange: PASS\n", o.pod.c_str());
      return 0;
    }
    auto ring = gpu::TcpRing::connect({o.index, o.peers, o.timeout});
    if (!ring) return fail(o, ring.error());
    TcpReducer reducer(std::move(*ring));
    return run_rounds(reducer, o, sizes, o.index == 0,
                      "over " + std::to_string(o.peers.size()) + " nodes (TCP ring)");
  }

  gpu::RendezvousHello hello;
  hello.index = o.local ? 0 : o.index;
  hello.pod = o.pod;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  hello.host = host;
  hello.sizes = sizes;
  gpu::RingListener listener;
  std::vector<int> devices;
  if (use_nccl) {
    hello.transport = std::string(gpu::kTransportNccl);
    devices = all_devices(backend);
    for (int d : devices) hello.gpus.push_back(backend.uuid(d));
    // Out of place needs a send and a receive buffer of each size.
    hello.free_bytes = gpu::least_free_device_memory(devices) / 2;
    if (hello.index == 0) {
      // Member 0 hosts NCCL's bootstrap root: the id is made here, in the
      // process that stays to use it, and travels to the others through
      // the supervisor.
      auto id = gpu::nccl_make_unique_id();
      if (!id) return fail(o, id.error());
      hello.nccl_id = *id;
    }
  } else {
    hello.transport = std::string(gpu::kTransportTcp);
    auto l = gpu::listen_for_ring(0);
    if (!l) return fail(o, l.error());
    listener = *l;
    hello.address =
        (o.host.empty() ? std::string("127.0.0.1") : o.host) + ":" + std::to_string(listener.port);
  }
  // Local: this process is the only member, and plans for itself (the same
  // refusals: a GPU listed twice, no size that fits).
  Expected<gpu::RendezvousReply> plan = make_error("no plan");
  if (o.local) {
    auto alone = gpu::plan_rendezvous({hello});
    plan = alone ? Expected<gpu::RendezvousReply>(alone->front())
                 : Expected<gpu::RendezvousReply>(Error{alone.error()});
  } else {
    gpu::PhaseMonitor::Scope phase(monitor(), -1, "the rendezvous",
                                   o.rendezvous_timeout + kDeadlineGrace);
    plan = rendezvous(*control, hello, o.rendezvous_timeout);
  }
  if (!plan) {
    if (listener.fd >= 0) ::close(listener.fd);
    return fail(o, plan.error());
  }
  if (plan->first_rank == 0 && !plan->skipped.empty()) {
    std::printf("%s: sizes %s skipped: some GPU lacks the free memory\n", o.pod.c_str(),
                size_list(plan->skipped).c_str());
  }
  const int members = static_cast<int>(plan->peers.size());
  if (!use_nccl) {
    if (members < 2) {
      ::close(listener.fd);
      std::printf("%s: allreduce over 1 node: nothing to exchange: PASS\n", o.pod.c_str());
      return 0;
    }
    std::vector<HostPort> peers;
    for (const auto& p : plan->peers) {
      auto hp = parse_host_port(p);
      if (!hp) return fail(o, "the plan's peer " + p + ": " + hp.error());
      peers.push_back(*hp);
    }
    gpu::RingConfig config{plan->first_rank, peers, o.timeout, listener.fd};
    auto ring = gpu::TcpRing::connect(config);
    if (!ring) return fail(o, ring.error());
    TcpReducer reducer(std::move(*ring));
    return run_rounds(reducer, o, plan->sizes, plan->first_rank == 0,
                      "over " + std::to_string(members) + " nodes (TCP ring)");
  }
  if (plan->world == 1) {
    // NCCL with one rank moves nothing (an in-place sum is a no-op): no
    // bandwidth to report.
    std::printf(
        "%s: allreduce of 1 rank (1 GPU in all): nothing to reduce, no bandwidth to "
        "measure: SKIP\n",
        o.pod.c_str());
    return 0;
  }
  gpu::NcclSetup setup;
  setup.unique_id = plan->nccl_id;
  setup.world = plan->world;
  setup.first_rank = plan->first_rank;
  setup.devices = devices;
  setup.timeout = o.timeout;
  Expected<std::unique_ptr<gpu::NcclAllreduce>> nccl = make_error("not created");
  {
    gpu::PhaseMonitor::Scope phase(monitor(), -1, "NCCL's init", o.timeout + kDeadlineGrace);
    nccl = gpu::NcclAllreduce::create(setup);
  }
  if (!nccl) return fail(o, nccl.error());
  NcclReducer reducer(std::move(*nccl));
  return run_rounds(reducer, o, plan->sizes, plan->first_rank == 0,
                    "of " + std::to_string(plan->world) + " ranks (NCCL, " +
                        std::to_string(devices.size()) + " here)");
}

}  // namespace atl::burn
