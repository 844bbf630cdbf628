// atl-burn: one node's burn or check (or its part of an allreduce ring), run as a child process of
// the node agent (so a crash or hang of GPU code never takes the agent down). Prints progress and
// one verdict line per GPU; exit 0 when every GPU passed, 1 when one failed, 2 on bad usage. No
// CAF: it only needs libs/gpu.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "atl/cli/command_line.hpp"
#include "atl/core/duration.hpp"
#include "atl/core/host_port.hpp"
#include "atl/gpu/backend.hpp"
#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/metrics.hpp"
#include "atl/gpu/nvml_health.hpp"
#include "atl/gpu/ring_allreduce.hpp"

namespace po = boost::program_options;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string what;  // gemm, transfer, check
  atl::Millis duration{20000};
  int size = 0;  // GEMM m=n=k; 0: backend default
  bool fp32 = false, tf32 = false;
  std::int64_t bytes = 256LL << 20;
  std::string pod = "this node";
  int expect_gpus = -1;
  // allreduce: this process's place in the ring, every member, the master's pod.
  int index = 0;
  std::vector<atl::HostPort> peers;
  std::string master;
  std::vector<std::int64_t> sizes;
};

Options parse(int argc, char** argv) {
  po::options_description desc(
      "Usage: atl-burn gemm|transfer|check [options]\n\n"
      "Burns or checks this node's GPUs (the CPU when there is none) and prints a\n"
      "verdict line per GPU. Exit 0 all passed, 1 a GPU failed, 2 bad usage.\n\nOptions");
  desc.add_options()("help,h", "show this help")("what", po::value<std::string>(),
                                                 "gemm, transfer or check")(
      "duration,d", po::value<std::string>(), "how long to burn (default 20s)")(
      "size", po::value<int>(), "GEMM size m=n=k (default 8192 on GPU, 512 on CPU)")(
      "fp32", "fp32 GEMM instead of bf16")("tf32", "fp32 GEMM with TF32 tensor cores")(
      "bytes", po::value<std::string>(), "transfer size (default 256M)")(
      "pod", po::value<std::string>(), "pod name for the output lines")(
      "expect-gpus", po::value<int>(), "GPUs the pod declared (check: must match)")(
      "index", po::value<int>(), "allreduce: this member's place in the ring")(
      "peers", po::value<std::string>(), "allreduce: HOST:PORT of every member, in ring order")(
      "master", po::value<std::string>(), "allreduce: the pod named as MasterAddr")(
      "sizes", po::value<std::string>(),
      "allreduce sizes, e.g. 512M,1G (default: the seed's, or 8M,32M on CPUs)");
  po::positional_options_description pos;
  pos.add("what", 1);
  po::variables_map vm = atl::cli::parse_or_exit(
      "atl-burn", po::command_line_parser(argc, argv).positional(pos), desc);
  Options o;
  if (!vm.count("what"))
    atl::cli::usage_error("atl-burn", "say what to do: gemm, transfer or check");
  o.what = vm["what"].as<std::string>();
  if (o.what != "gemm" && o.what != "transfer" && o.what != "check" && o.what != "allreduce")
    atl::cli::usage_error("atl-burn",
                          "bad burn '" + o.what + "': use gemm, transfer, check or allreduce");
  if (vm.count("duration")) {
    auto d = atl::parse_duration(vm["duration"].as<std::string>());
    if (!d || d->count() <= 0)
      atl::cli::usage_error("atl-burn", "--duration: " + (d ? "must be positive" : d.error()));
    o.duration = *d;
  }
  if (vm.count("size")) {
    o.size = vm["size"].as<int>();
    if (o.size < 1) atl::cli::usage_error("atl-burn", "--size: must be positive");
  }
  o.fp32 = vm.count("fp32") || vm.count("tf32");
  o.tf32 = vm.count("tf32") > 0;
  if (vm.count("bytes")) {
    auto b = atl::gpu::parse_burn_size(vm["bytes"].as<std::string>());
    if (!b || *b < 2)
      atl::cli::usage_error("atl-burn", "--bytes: " + (b ? std::string("too small") : b.error()));
    o.bytes = *b;
  }
  if (vm.count("pod")) o.pod = vm["pod"].as<std::string>();
  if (vm.count("expect-gpus")) o.expect_gpus = vm["expect-gpus"].as<int>();
  if (o.what == "allreduce") {
    if (!vm.count("peers") || !vm.count("index"))
      atl::cli::usage_error("atl-burn", "allreduce needs --index and --peers");
    std::string peers = vm["peers"].as<std::string>();
    for (size_t start = 0; start <= peers.size();) {
      size_t comma = peers.find(',', start);
      auto hp = atl::parse_host_port(
          peers.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (!hp) atl::cli::usage_error("atl-burn", "--peers: " + hp.error());
      o.peers.push_back(*hp);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    o.index = vm["index"].as<int>();
    if (o.index < 0 || o.index >= static_cast<int>(o.peers.size()))
      atl::cli::usage_error("atl-burn", "--index: must be below the number of peers (" +
                                            std::to_string(o.peers.size()) + ")");
    o.master = vm.count("master") ? vm["master"].as<std::string>() : o.pod;
  }
  if (vm.count("sizes")) {
    std::string text = vm["sizes"].as<std::string>();
    for (size_t start = 0; start <= text.size();) {
      size_t comma = text.find(',', start);
      auto size = atl::gpu::parse_burn_size(
          text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (!size || *size < 4)
        atl::cli::usage_error("atl-burn",
                              "--sizes: " + (size ? std::string("too small") : size.error()));
      o.sizes.push_back(*size);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return o;
}

std::string elapsed(Clock::time_point t0, atl::Millis total) {
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - t0).count();
  return std::to_string(secs) + "s/" + atl::format_duration(total);
}

// GEMM rounds until the duration is over; every round verified.
int burn_gemm(atl::gpu::Backend& backend, const Options& o) {
  atl::gpu::GemmConfig config;
  config.size = o.size ? o.size : (backend.name() == "cuda" ? 8192 : 512);
  config.bf16 = !o.fp32;
  config.allow_tf32 = o.tf32;
  int failed = 0;
  for (int dev = 0; dev < backend.device_count(); ++dev) {
    auto t0 = Clock::now();
    int rounds = 0;
    double sum = 0;
    std::string problem;
    while (problem.empty() && (rounds == 0 || Clock::now() - t0 < o.duration)) {
      auto r = backend.gemm(dev, config);
      ++rounds;
      if (!r) {
        problem = r.error();
        break;
      }
      sum += r->tflops;
      std::printf("%s GPU %d round %d (%s): gemm %.3f TFLOP/s, %s\n", o.pod.c_str(), dev, rounds,
                  elapsed(t0, o.duration).c_str(), r->tflops,
                  r->ok() ? "verified" : "WRONG RESULTS");
      std::fflush(stdout);
      if (!r->ok()) {
        problem = std::to_string(r->differing) + " elements differ between identical GEMMs, " +
                  std::to_string(r->nans) + " NaN, " + std::to_string(r->wrong) + " wrong";
      }
    }
    std::printf("%s GPU %d (%s): gemm %.3f TFLOP/s average over %d rounds: %s%s\n", o.pod.c_str(),
                dev, backend.name().c_str(), rounds ? sum / rounds : 0.0, rounds,
                problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
    failed += !problem.empty();
  }
  return failed ? 1 : 0;
}

int burn_transfer(atl::gpu::Backend& backend, const Options& o) {
  int failed = 0;
  for (int dev = 0; dev < backend.device_count(); ++dev) {
    auto t0 = Clock::now();
    int rounds = 0;
    double h2d = 0, d2h = 0, both = 0;
    std::string problem;
    while (problem.empty() && (rounds == 0 || Clock::now() - t0 < o.duration)) {
      auto r = backend.transfer(dev, o.bytes);
      ++rounds;
      if (!r) {
        problem = r.error();
        break;
      }
      h2d += r->h2d_gbps;
      d2h += r->d2h_gbps;
      both += r->bidir_gbps;
      std::printf("%s GPU %d round %d (%s): H2D %.1f GB/s, D2H %.1f GB/s, both %.1f GB/s, %s\n",
                  o.pod.c_str(), dev, rounds, elapsed(t0, o.duration).c_str(), r->h2d_gbps,
                  r->d2h_gbps, r->bidir_gbps, r->checksum_ok ? "checksum ok" : "CHECKSUM MISMATCH");
      std::fflush(stdout);
      if (!r->checksum_ok) problem = "data changed on the round trip";
    }
    std::printf("%s GPU %d (%s): transfer %s H2D %.1f GB/s, D2H %.1f GB/s over %d rounds: %s%s\n",
                o.pod.c_str(), dev, backend.name().c_str(),
                atl::gpu::format_burn_size(o.bytes).c_str(), rounds ? h2d / rounds : 0.0,
                rounds ? d2h / rounds : 0.0, rounds,
                problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
    failed += !problem.empty();
  }
  return failed ? 1 : 0;
}

// Level-1 checks: the devices the pod declared are there, a GEMM with a known
// answer is right, a transfer round-trips its bytes.
int check(atl::gpu::Backend& backend, const Options& o) {
  if (o.expect_gpus > 0 && backend.name() != "cuda") {
    std::printf("%s: check FAIL: the pod declares %d GPUs but CUDA sees none\n", o.pod.c_str(),
                o.expect_gpus);
    return 1;
  }
  if (o.expect_gpus >= 0 && backend.name() == "cuda" && backend.device_count() != o.expect_gpus) {
    std::printf("%s: check FAIL: the pod declares %d GPUs but CUDA sees %d\n", o.pod.c_str(),
                o.expect_gpus, backend.device_count());
    return 1;
  }
  int failed = 0;
  for (int dev = 0; dev < backend.device_count(); ++dev) {
    atl::gpu::GemmConfig config;
    config.size = 256;
    config.repeats = 2;
    std::string problem;
    auto g = backend.gemm(dev, config);
    if (!g)
      problem = "gemm: " + g.error();
    else if (!g->ok())
      problem = "gemm gave wrong results";
    if (problem.empty()) {
      auto t = backend.transfer(dev, 16LL << 20);
      if (!t)
        problem = "transfer: " + t.error();
      else if (!t->checksum_ok)
        problem = "transfer changed the data";
    }
    if (problem.empty() && backend.name() == "cuda") {
      auto nvml = atl::gpu::nvml_health(dev);
      if (!nvml.available) {
        std::printf("%s GPU %d: %s (ECC and retired pages not checked)\n", o.pod.c_str(), dev,
                    nvml.note.c_str());
      } else if (!nvml.ok()) {
        problem = "NVML: " + std::to_string(nvml.ecc_uncorrected) + " uncorrected ECC errors" +
                  (nvml.retired_pages_pending ? ", retired pages pending a reset" : "");
      }
    }
    std::printf("%s GPU %d (%s): check %s%s\n", o.pod.c_str(), dev, backend.name().c_str(),
                problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
    failed += !problem.empty();
  }
  return failed ? 1 : 0;
}

// Allreduce rounds over every size until the duration is over. The master
// prints the seed's line per round and size; every member prints its verdict.
int burn_allreduce(const Options& o) {
  std::vector<std::int64_t> sizes = o.sizes;
  if (sizes.empty()) sizes = {8LL << 20, 32LL << 20};  // the CPU path: TCP between nodes
  if (o.peers.size() == 1) {
    std::printf("%s: allreduce over 1 node: nothing to exchange: PASS\n", o.pod.c_str());
    return 0;
  }
  auto ring = atl::gpu::TcpRing::connect({o.index, o.peers, std::chrono::seconds(30)});
  if (!ring) {
    std::printf("%s: allreduce FAIL: %s\n", o.pod.c_str(), ring.error().c_str());
    return 1;
  }
  const int n = (*ring)->size();
  auto t0 = Clock::now();
  int round = 0;
  std::int64_t wrong = 0;
  std::string problem;
  while (problem.empty()) {
    // Member 0's clock decides for all: everyone runs the same rounds.
    auto more = (*ring)->agree(round == 0 || Clock::now() - t0 < o.duration);
    if (!more) {
      problem = more.error();
      break;
    }
    if (!*more) break;
    ++round;
    for (std::int64_t bytes : sizes) {
      auto r = (*ring)->allreduce(bytes, round);
      if (!r) {
        problem = r.error();
        break;
      }
      wrong += r->wrong;
      if (o.index == 0) {
        std::printf("%s\n", atl::gpu::format_allreduce_round(
                                round, bytes, atl::gpu::allreduce_busbw_gbps(bytes, r->seconds, n),
                                atl::gpu::algbw_gbps(bytes, r->seconds), o.master)
                                .c_str());
        std::fflush(stdout);
      }
      if (r->wrong) problem = std::to_string(r->wrong) + " wrong elements (#wrong)";
    }
  }
  std::printf("%s: allreduce over %d nodes, %d rounds, #wrong %lld: %s%s\n", o.pod.c_str(), n,
              round, static_cast<long long>(wrong),
              problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
  return problem.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.what == "allreduce") return burn_allreduce(o);
  auto backend = atl::gpu::make_backend();
  if (o.what == "gemm") return burn_gemm(*backend, o);
  if (o.what == "transfer") return burn_transfer(*backend, o);
  return check(*backend, o);
}
