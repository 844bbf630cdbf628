// atl-burn: one node's burn or check (or its part of an allreduce), run as a
// child process of the node agent (so a crash or hang of GPU code never takes
// the agent down). Prints progress and one verdict line per GPU; exit 0 when
// every GPU passed, 1 when one failed, 2 on bad usage. No CAF: it needs
// libs/gpu, and atl_os for its control channel to the supervisor.
#include <boost/program_options.hpp>
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
      "allreduce sizes, e.g. 512M,1G (default: 512M,1G,2G,4G on GPUs, 8M,32M over TCP)")(
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
    const std::string sizes = vm["sizes"].as<std::string>();
    for (std::string_view item : atl::split_list(sizes)) {
      auto size = atl::gpu::parse_burn_size(item);
      if (!size || *size < 4) usage("--sizes: " + (size ? std::string("too small") : size.error()));
      o.sizes.push_back(*size);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  auto backend = atl::gpu::make_backend();
  if (o.what == "allreduce") return atl::burn::burn_allreduce(*backend, o);
  if (o.what == "gemm") return atl::burn::burn_gemm(*backend, o);
  if (o.what == "transfer") return atl::burn::burn_transfer(*backend, o);
  return atl::burn::check(*backend, o);
}
