// atl-burn's parts: the options every part reads, and one function per job.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "atl/core/duration.hpp"
#include "atl/core/host_port.hpp"
#include "atl/gpu/backend.hpp"
#include "atl/gpu/phase_monitor.hpp"

namespace atl::burn {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string what;  // gemm, transfer, check, allreduce
  Millis duration{20000};
  int size = 0;  // GEMM m=n=k; 0: backend default
  bool fp32 = false, tf32 = false;
  std::int64_t bytes = 256LL << 20;
  std::string pod = "this node";
  int expect_gpus = -1;
  // allreduce
  bool local = false;           // among this node's GPUs only (one process, every rank)
  int index = 0;                // this member's place (rendezvous) or place in --peers
  std::string host;             // the address other members reach this one at (TCP ring)
  std::vector<HostPort> peers;  // without a control channel: the whole TCP ring
  std::string master;
  std::vector<std::int64_t> sizes;
  int iterations = 20;                // allreduce: timed collectives per size (nccl-tests -n)
  int warmup_iterations = 5;          // allreduce: untimed ones before them (nccl-tests -w)
  Millis timeout{60000};              // the watchdogs: any one collective, peer wait or GPU phase
  Millis rendezvous_timeout{600000};  // how long to wait for the other members' hellos
};

// Grace added to every deadline of the phase monitor (process start, CUDA
// context creation, the last progress line).
inline constexpr Millis kDeadlineGrace{30000};

// The process's phase monitor (gpu/phase_monitor.hpp), set up by main; null
// in tests that call the parts directly.
gpu::PhaseMonitor* monitor();
// Inside a PhaseMonitor::Scope: the GPU moves on to its next phase.
inline void next_phase(int gpu, std::string phase, Millis limit) {
  if (auto* m = monitor()) m->enter(gpu, std::move(phase), limit);
}

// Hands a figure to the supervisor (its metrics) when atl runs this process
// with a control channel; nothing otherwise. Never fails the burn.
// `round` 0: the whole burn's figure (its average); k: round k's.
void report_figure(int gpu, const std::string& metric, double value, const std::string& size = "",
                   int round = 0);

// "12s/20s": time since t0 over the total.
std::string elapsed(Clock::time_point t0, Millis total);

int burn_gemm(gpu::Backend& backend, const Options& o);
int burn_transfer(gpu::Backend& backend, const Options& o);
int check(gpu::Backend& backend, const Options& o);
int burn_allreduce(gpu::Backend& backend, const Options& o);

}  // namespace atl::burn
