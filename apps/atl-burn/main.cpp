// atl-burn: one node's burn or check (or its part of an allreduce), run as a
// child process of the node agent (so a crash or hang of GPU code never takes
// the agent down). Prints progress and one verdict line per GPU; exit 0 when
// every GPU passed, 1 when one failed, 2 on bad usage. No CAF: it needs
// libs/gpu, and atl_os for its control channel to the supervisor.
#include <boost/program_options.hpp>
#include <cstdio>
#include <string>

#include "atl/cli/command_line.hpp"
#include "atl/core/split.hpp"
#include "atl/gpu/burn_types.hpp"
#include "burn.hpp"

namespace po = boost::program_options;
using atl::burn::Options;

namespace {

[[noreturn]] void usage(const std::string& text) { atl::cli::usage_error("atl-burn", text); }

atl::Millis positive_duration(const po::variables_map& vm, const char* name) {
  auto d = atl::parse_duration(vm[name].as<std::string>());
  if (!d || d->count() <= 0)
    usage(std::string("--") + name + ": " + (d ? std::string("must be positive") : d.error()));
  return *d;
}

Options parse(int argc, char** argv) {
  po::options_description desc(
      "Usage: atl-burn gemm|transfer|check|allreduce [options]\n\n"
      "Burns or checks this node's GPUs (the CPU when there is none) and prints a\n"
      "verdict line per GPU. Exit 0 all passed, 1 a GPU failed, 2 bad usage.\n"
      "allreduce: NCCL among this node's GPUs (--local); among several nodes\n"
      "when started by atlctl burn/check (they meet through the supervisor); or a\n"
      "TCP ring over --peers by hand.\n\nOptions");
  desc.add_options()("help,h", "show this help")("what", po::value<std::string>(),
                                                 "gemm, transfer, check or allreduce")(
      "duration,d", po::value<std::string>(), "how long to burn (default 20s)")(
      "size", po::value<int>(), "GEMM size m=n=k (default 8192 on GPU, 512 on CPU)")(
      "fp32", "fp32 GEMM instead of bf16")("tf32", "fp32 GEMM with TF32 tensor cores")(
      "bytes", po::value<std::string>(), "transfer size (default 256M)")(
      "pod", po::value<std::string>(), "pod name for the output lines")(
      "expect-gpus", po::value<int>(), "GPUs the pod declared (check: must match)")(
      "local", "allreduce among this node's GPUs only")(
      "index", po::value<int>(), "allreduce: this member's place (node order)")(
      "host", po::value<std::string>(), "allreduce: the address other members reach this one at")(
      "peers", po::value<std::string>(), "allreduce by hand: HOST:PORT of every member, in order")(
      "master", po::value<std::string>(), "allreduce: the pod named as MasterAddr")(
      "sizes", po::value<std::string>(),
      "allreduce sizes: a list (512M,1G) or a sweep BEGIN:END[:FACTOR] (8M:1G:2); default "
      "512M,1G,2G,4G on GPUs, 8M,32M over TCP")("begin,b", po::value<std::string>(),
                                                "allreduce sweep: smallest size (nccl-tests -b)")(
      "end,e", po::value<std::string>(), "allreduce sweep: largest size (nccl-tests -e)")(
      "factor,f", po::value<int>(), "allreduce sweep: size multiplier (nccl-tests -f, default 2)")(
      "iters,n", po::value<int>(), "allreduce: timed iterations per size (default 20)")(
      "warmup-iters,w", po::value<int>(), "allreduce: untimed iterations first (default 5)")(
      "timeout", po::value<std::string>(),
      "allreduce watchdog: longest wait for one collective or peer (default 60s)")(
      "rendezvous-timeout", po::value<std::string>(),
      "allreduce: longest wait for the other members to join (default 10m)");
  po::positional_options_description pos;
  pos.add("what", 1);
  po::variables_map vm = atl::cli::parse_or_exit(
      "atl-burn", po::command_line_parser(argc, argv).positional(pos), desc);
  Options o;
  if (!vm.count("what")) usage("say what to do: gemm, transfer, check or allreduce");
  o.what = vm["what"].as<std::string>();
  if (o.what != "gemm" && o.what != "transfer" && o.what != "check" && o.what != "allreduce")
    usage("bad burn '" + o.what + "': use gemm, transfer, check or allreduce");
  if (vm.count("duration")) o.duration = positive_duration(vm, "duration");
  if (vm.count("timeout")) o.timeout = positive_duration(vm, "timeout");
  if (vm.count("rendezvous-timeout"))
    o.rendezvous_timeout = positive_duration(vm, "rendezvous-timeout");
  if (vm.count("size")) {
    o.size = vm["size"].as<int>();
    if (o.size < 1) usage("--size: must be positive");
  }
  o.fp32 = vm.count("fp32") || vm.count("tf32");
  o.tf32 = vm.count("tf32") > 0;
  if (vm.count("bytes")) {
    auto b = atl::gpu::parse_burn_size(vm["bytes"].as<std::string>());
    if (!b || *b < 2) usage("--bytes: " + (b ? std::string("too small") : b.error()));
    o.bytes = *b;
  }
  if (vm.count("pod")) o.pod = vm["pod"].as<std::string>();
  if (vm.count("expect-gpus")) o.expect_gpus = vm["expect-gpus"].as<int>();
  o.local = vm.count("local") > 0;
  if (o.local && o.what != "allreduce") usage("--local: only allreduce runs locally");
  if (vm.count("index")) {
    o.index = vm["index"].as<int>();
    if (o.index < 0) usage("--index: must not be negative");
  }
  if (vm.count("host")) o.host = vm["host"].as<std::string>();
  if (vm.count("peers")) {
    const std::string peers = vm["peers"].as<std::string>();
    for (std::string_view item : atl::split_list(peers)) {
      auto hp = atl::parse_host_port(item);
      if (!hp) usage("--peers: " + hp.error());
      o.peers.push_back(*hp);
    }
    if (o.index >= static_cast<int>(o.peers.size()))
      usage("--index: must be below the number of peers (" + std::to_string(o.peers.size()) + ")");
  }
  o.master = vm.count("master") ? vm["master"].as<std::string>() : o.pod;
  if (vm.count("sizes")) {
    auto sizes = atl::gpu::parse_size_spec(vm["sizes"].as<std::string>());
    if (!sizes) usage("--sizes: " + sizes.error());
    o.sizes = *sizes;
  }
  const bool sweep = vm.count("begin") || vm.count("end") || vm.count("factor");
  if (sweep) {
    if (vm.count("sizes")) usage("--sizes and -b/-e/-f: give a list or a sweep, not both");
    if (!vm.count("begin") || !vm.count("end")) usage("a sweep needs both -b and -e");
    auto begin = atl::gpu::parse_burn_size(vm["begin"].as<std::string>());
    if (!begin) usage("-b: " + begin.error());
    auto end = atl::gpu::parse_burn_size(vm["end"].as<std::string>());
    if (!end) usage("-e: " + end.error());
    auto sizes =
        atl::gpu::sweep_sizes(*begin, *end, vm.count("factor") ? vm["factor"].as<int>() : 2);
    if (!sizes) usage(sizes.error());
    o.sizes = *sizes;
  }
  if (vm.count("iters")) {
    o.iterations = vm["iters"].as<int>();
    if (o.iterations < 1) usage("--iters: must be positive");
  }
  if (vm.count("warmup-iters")) {
    o.warmup_iterations = vm["warmup-iters"].as<int>();
    if (o.warmup_iterations < 0) usage("--warmup-iters: must not be negative");
  }
  return o;
}

}  // namespace

namespace atl::burn {
namespace {
gpu::PhaseMonitor* the_monitor = nullptr;
}
gpu::PhaseMonitor* monitor() { return the_monitor; }
}  // namespace atl::burn

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a line is out as soon as it is printed
  // Every GPU phase has a deadline; one past it ends the process with a
  // FAIL line (a hung CUDA call cannot be cancelled).
  atl::gpu::PhaseMonitor watchdog(atl::gpu::exit_when_stuck(o.pod));
  atl::burn::the_monitor = &watchdog;
  auto choice = atl::gpu::choose_backend();
  auto& backend = *choice.backend;
  // No silent fallback: a pod that declares GPUs is burned on them or fails.
  if (auto gpus = atl::gpu::require_gpus(backend.name(), backend.device_count(), o.expect_gpus,
                                         choice.cuda_note);
      !gpus) {
    std::printf("%s: %s FAIL: %s\n", o.pod.c_str(), o.what.c_str(), gpus.error().c_str());
    return 1;
  }
  if (backend.name() != "cuda")
    std::printf("%s: no GPU in use (%s): the CPU is %s\n", o.pod.c_str(), choice.cuda_note.c_str(),
                o.what == "check" ? "checked" : "burned");
  int rc = 0;
  if (o.what == "allreduce")
    rc = atl::burn::burn_allreduce(backend, o);
  else if (o.what == "gemm")
    rc = atl::burn::burn_gemm(backend, o);
  else if (o.what == "transfer")
    rc = atl::burn::burn_transfer(backend, o);
  else
    rc = atl::burn::check(backend, o);
  std::fflush(stdout);
  atl::burn::the_monitor = nullptr;
  return rc;
}
