// atlctl stop, run and recover: the seed's debug workflow. The supervisor
// decides what is allowed; these print the seed's lines and map its answers
// to exit codes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "atl/actors/messages.hpp"
#include "atl/core/duration.hpp"
#include "atl/core/env.hpp"
#include "atl/core/shell.hpp"
#include "atl/gpu/burn_types.hpp"
#include "cli.hpp"

namespace atlctl {

namespace {

constexpr auto kQuickAnswer = std::chrono::seconds(15);
constexpr auto kStartAnswer = std::chrono::seconds(60);
constexpr auto kStopAnswer = std::chrono::minutes(10);  // ranks get their grace first
constexpr std::int64_t kRunPollMs = 250;
constexpr std::int64_t kDrainBytes = 4 << 20;

void no_options(po::options_description&) {}

Answer checked(Answer a) {
  if (a.code != 0) die(a.code, a.text);
  return a;
}

RunAnswer checked(RunAnswer a) {
  if (a.code != 0) die(a.code, a.text);
  return a;
}

int stop(SupervisorClient& client, const po::variables_map&) {
  // The stop is an operation with an id: its end is what we wait for, even
  // when another operator recovers the job meanwhile.
  StopAnswer accepted =
      client.stop_answer_or_die(caf::make_message(atl::debug_stop_atom::value), kQuickAnswer);
  if (accepted.code != 0) die(accepted.code, accepted.text);
  const std::int32_t op = accepted.op;
  if (op < 1) die(kExitFailed, "stop: the supervisor's answer names no stop");
  std::cout << "Stopping task in all workers..." << std::endl;
  checked(client.answer_or_die(caf::make_message(atl::StopWait{op}), kStopAnswer));
  std::cout << "Stop job task success." << std::endl;
  return kExitOk;
}

void delete_options(po::options_description& desc) {
  desc.add_options()("pods,p", po::value<std::string>(),
                     "pods to delete: POD, POD1,POD2 or all (see status -v for names; also "
                     "--podList)");
  guide_aliases(desc, {{"podList", "pods"}});
}

int delete_pods(SupervisorClient& client, const po::variables_map& vm) {
  if (!vm.count("pods")) die(kExitUsage, "delete: -p PODS is required (POD[,POD...] or all)");
  const std::string pods = vm["pods"].as<std::string>();
  if (pods.empty()) die(kExitUsage, "delete: -p: must not be empty");
  checked(client.answer_or_die(caf::make_message(atl::DeletePods{pods}), kQuickAnswer));
  std::cout << "Send delete worker pod command to specified workers successfully." << std::endl;
  return kExitOk;
}

int recover(SupervisorClient& client, const po::variables_map&) {
  checked(client.answer_or_die(caf::make_message(atl::Recover{}), kStartAnswer));
  std::cout << "Task recovering...\nTask recover success." << std::endl;
  return kExitOk;
}

// Follows a started run to its end, printing each rank's output as it comes;
// returns the run's final status. Ctrl-C ends only atlctl: the ranks' commands
// run on.
atl::RunStatus follow_run(SupervisorClient& client, atl::RunStatus status, bool prefixed) {
  const std::int32_t run_id = status.run;
  std::map<atl::StreamId, std::int64_t> offsets;  // stream -> bytes printed
  for (const auto& r : status.ranks) offsets[atl::StreamId::of_run(run_id, r.rank)] = 0;
  // Every rank's new output in one round trip (thousands of ranks: one read
  // each per poll took seconds), repeated while a read came back full.
  auto drain = [&] {
    while (true) {
      std::vector<atl::StreamId> streams;
      std::vector<std::int64_t> from;
      for (const auto& [stream, offset] : offsets) {
        streams.push_back(stream);
        from.push_back(offset);
      }
      auto got = client.read_logs({atl::LogRead::from, streams, from, kDrainBytes});
      if (!got || got->empty()) break;
      std::int64_t total = 0;
      for (auto& piece : *got) {
        if (prefixed)
          print_prefixed(piece.stream, piece.data);
        else
          std::cout << piece.data;
        offsets[piece.stream] = piece.next_offset;
        total += static_cast<std::int64_t>(piece.data.size());
      }
      if (total < kDrainBytes / 2) break;  // caught up
    }
    std::cout.flush();
  };
  while (true) {
    RunAnswer a = checked(client.run_answer_or_die(
        caf::make_message(atl::RunWait{run_id, kRunPollMs}), kQuickAnswer));
    status = std::move(a.status);
    drain();  // a finished rank's output is complete before its end is reported
    if (status.done) return status;
  }
}

// run's words after the options are the command: "-r 0 ls -la" runs "ls -la".
std::vector<std::string> split_run_words(std::vector<std::string>& args) {
  std::vector<std::string> options;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    // "-r -1" must reach the rank parser (and its error), not look like a flag.
    if ((a == "-r" || a == "--ranks") && i + 1 < args.size()) {
      options.push_back("--ranks=" + args[++i]);
      continue;
    }
    options.push_back(a);
  }
  std::vector<std::string> words(args.begin() + static_cast<long>(i), args.end());
  args = options;
  return words;
}

void run_options(po::options_description& desc) {
  desc.add_options()("ranks,r", po::value<std::string>()->default_value("all"),
                     "ranks: all, 1,2,3, 1-8, 0,2-4,7")(
      "force,f", "run in any state, untracked: stop leaves it running")(
      "detach", "return once the command started; read its output with atlctl logs");
}

int run(SupervisorClient& client, const po::variables_map& vm) {
  if (!vm.count("words"))
    die(kExitUsage,
        "run: no command given: put it after the options, e.g. atlctl run -f -r all nvidia-smi");
  std::string command = atl::command_from_words(vm["words"].as<std::vector<std::string>>());
  bool forced = vm.count("force") > 0;
  RunAnswer started = checked(client.run_answer_or_die(
      caf::make_message(atl::RunCommand{vm["ranks"].as<std::string>(), command, forced}),
      kStartAnswer));
  std::cout << "Send command to all workers success." << std::endl;
  if (vm.count("detach")) return kExitOk;

  auto status = follow_run(client, std::move(started.status), /*prefixed=*/true);
  int failed = 0;
  for (const auto& r : status.ranks) {
    std::string why = r.failure();
    if (why.empty()) continue;
    ++failed;
    std::cout << "rank " << r.rank << " on " << r.pod << " failed: " << why << "\n";
  }
  std::cout.flush();
  return failed == 0 ? kExitOk : kExitFailed;
}

// --- burn and check ------------------------------------------------------------

void burn_options(po::options_description& desc) {
  desc.add_options()("type,t", po::value<std::string>()->default_value("gemm"),
                     "gemm, transfer, local, global or batch (also --burnType)")(
      "duration,d", po::value<std::string>()->default_value("20s"), "how long: 20s, 5m, 10min")(
      "envs,e", po::value<std::string>(), "environment for the burn: k=v or \"k1=v1,v1b;k2=v2\"")(
      "workers,w", po::value<std::string>()->default_value("all"),
      "all or pod names, comma separated (also --workerList)")(
      "output,o", po::value<std::string>(),
      "write the log to FILE (overwritten) instead of stdout (also --outputLogs)")(
      "sizes", po::value<std::string>(),
      "allreduce sizes (-t local|global|batch): a list, 512M,1G, or a sweep BEGIN:END[:FACTOR] "
      "like nccl-tests' -b/-e/-f, 8M:1G:2 (default 512M,1G,2G,4G)");
  guide_aliases(desc, {{"burnType", "type"}, {"workerList", "workers"}, {"outputLogs", "output"}});
}

void check_options(po::options_description& desc) {
  desc.add_options()("type,t", po::value<std::string>()->default_value("all"),
                     "gpu, allreduce or all (also --checkType)")(
      "envs,e", po::value<std::string>(), "environment for the check: k=v or \"k1=v1;k2=v2\"")(
      "workers,w", po::value<std::string>()->default_value("all"),
      "all or pod names, comma separated (also --workerList)")(
      "output,o", po::value<std::string>(),
      "write the log to FILE (overwritten) instead of stdout (also --outputLogs)");
  guide_aliases(desc, {{"checkType", "type"}, {"workerList", "workers"}, {"outputLogs", "output"}});
}

// -o FILE must be writable before anything starts (a refused command changes
// nothing, the file included). Tried for real, not with access(): root passes
// access() for a directory or for /proc, and the check ran before the file
// failed to open. An existing file is opened without truncating it; a new
// one is made and removed again.
void check_output_writable(const po::variables_map& vm) {
  if (!vm.count("output")) return;
  const std::string path = vm["output"].as<std::string>();
  if (path.empty()) die(kExitUsage, "-o: the file name is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    die(kExitUsage, "-o: " + path + " is a directory: give a file name");
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) ::unlink(path.c_str());
  }
  if (fd < 0) die(kExitUsage, "-o: cannot write " + path + ": " + std::strerror(errno));
  ::close(fd);
}

// -o FILE: std::cout writes to the file while this lives (an exit() on the way
// still flushes into it: the file outlives the stack that exit() skips).
class OutputRedirect {
 public:
  explicit OutputRedirect(const po::variables_map& vm) {
    if (!vm.count("output")) return;
    const std::string path = vm["output"].as<std::string>();
    file_.open(path, std::ios::trunc);
    if (!file_) die(kExitUsage, "-o: cannot write " + path);
    saved_ = std::cout.rdbuf(file_.rdbuf());
  }
  ~OutputRedirect() {
    if (saved_) std::cout.rdbuf(saved_);
  }
  OutputRedirect(const OutputRedirect&) = delete;
  OutputRedirect& operator=(const OutputRedirect&) = delete;

 private:
  std::ofstream file_;
  std::streambuf* saved_ = nullptr;
};

// Runs atl-burn on one rank of each chosen node; its lines name pod and GPU.
int run_node_tool(SupervisorClient& client, const po::variables_map& vm, const std::string& kind,
                  const std::string& tools, const std::string& duration,
                  const std::string& sizes = "") {
  std::string envs = vm.count("envs") ? vm["envs"].as<std::string>() : "";
  if (!envs.empty()) {
    if (auto parsed = atl::parse_env_spec(envs); !parsed) die(kExitUsage, "-e: " + parsed.error());
  }
  const std::string workers = vm["workers"].as<std::string>();
  if (auto parsed = atl::parse_worker_list(workers); !parsed)
    die(kExitUsage, "-w: " + parsed.error());
  check_output_writable(vm);
  RunAnswer started = checked(client.run_answer_or_die(
      caf::make_message(atl::NodeToolRequest{kind, tools, duration, envs, workers, sizes}),
      kStartAnswer));
  OutputRedirect output(vm);
  // The guide's first line, for burn as for check.
  std::cout << (workers == "all" ? "All workers will be checked."
                                 : "Workers " + workers + " will be checked.")
            << std::endl;
  auto status = follow_run(client, std::move(started.status), /*prefixed=*/false);
  std::cout << "Check finished." << std::endl;
  if (kind == "check") std::cout << "Check Quit." << std::endl;
  std::string failed;
  for (const auto& r : status.ranks) {
    std::string why = r.failure();
    if (why.empty()) continue;
    failed += (failed.empty() ? "" : ", ") + r.pod + " (" + why + ")";
  }
  std::cout.flush();
  if (!status.deadline.empty()) failed += "; " + status.deadline;
  if (!failed.empty()) die(kExitFailed, kind + " failed on " + failed + ": see its FAIL lines");
  return kExitOk;
}

int burn(SupervisorClient& client, const po::variables_map& vm) {
  auto type = atl::gpu::parse_burn_type(vm["type"].as<std::string>());
  if (!type) die(kExitUsage, "burn -t: " + type.error());
  auto duration = atl::parse_duration(vm["duration"].as<std::string>());
  if (!duration || duration->count() <= 0)
    die(kExitUsage, "burn -d: " + (duration ? std::string("must be positive") : duration.error()));
  if (*type == atl::gpu::BurnType::batch && vm["workers"].as<std::string>() == "all") {
    die(kExitUsage, "burn -t batch needs the workers to burn together: give -w POD1,POD2,...");
  }
  if (*type == atl::gpu::BurnType::global && vm["workers"].as<std::string>() != "all") {
    die(kExitUsage, "burn -t global runs on all workers: use -t batch with -w");
  }
  std::string tool = (*type == atl::gpu::BurnType::global || *type == atl::gpu::BurnType::batch)
                         ? "allreduce"
                         : std::string(atl::gpu::to_string(*type));
  std::string sizes;
  if (vm.count("sizes")) {
    if (*type == atl::gpu::BurnType::gemm || *type == atl::gpu::BurnType::transfer)
      die(kExitUsage, "burn --sizes: only allreduce burns (-t local, global, batch) take sizes");
    auto parsed = atl::gpu::parse_size_spec(vm["sizes"].as<std::string>());
    if (!parsed) die(kExitUsage, "burn --sizes: " + parsed.error());
    sizes = atl::gpu::format_size_list(*parsed);
  }
  return run_node_tool(client, vm, "burn", tool, atl::format_duration(*duration), sizes);
}

int check(SupervisorClient& client, const po::variables_map& vm) {
  auto type = atl::gpu::parse_check_type(vm["type"].as<std::string>());
  if (!type) die(kExitUsage, "check -t: " + type.error());
  // One short verified round for the allreduce check.
  const char* tools = *type == atl::gpu::CheckType::gpu         ? "check"
                      : *type == atl::gpu::CheckType::allreduce ? "allreduce"
                                                                : "check,allreduce";
  return run_node_tool(client, vm, "check", tools, "1ms");
}

}  // namespace

const Command kStopCommand{
    "Usage: atlctl stop\n\n"
    "In state command: stops user code on all workers (SIGTERM, SIGKILL after the\n"
    "grace) and parks the job in debugStop. In debugCommand: stops the debug\n"
    "command (processes of run -f are not tracked and keep running). Prints\n"
    "'Stopping task in all workers...' then 'Stop job task success.' Never uses\n"
    "the restart budget.",
    no_options, stop};

const Command kDebugCommand{
    "Usage: atlctl debug\n\n"
    "Puts the job in the debug state as atlctl stop does (user code stopped,\n"
    "state debugStop), e.g. before atlctl delete so that the delete does not use\n"
    "the restart budget. Prints what stop prints.",
    no_options, stop};

const Command kDeleteCommand{
    "Usage: atlctl delete -p POD[,POD...]|all\n\n"
    "Deletes worker pods: each kills its ranks and exits, and is recreated under\n"
    "the same name (by Kubernetes; by headnode --local-workers locally). In state\n"
    "command the job then restarts from scratch and one restart of the budget is\n"
    "used; from debugStop/debugCommand (atlctl debug first) none is, and the job\n"
    "stays parked until atlctl recover. An unknown or absent pod refuses the whole\n"
    "command: nothing is deleted. Prints 'Send delete worker pod command to\n"
    "specified workers successfully.'",
    delete_options, delete_pods};

const Command kRunCommand{
    "Usage: atlctl run [-r RANKS] [-f] [--detach] CMD...\n\n"
    "Runs CMD on the chosen ranks with each rank's full environment. Needs\n"
    "debugStop (unless -f) and leaves the job in debugCommand: end it with\n"
    "atlctl stop before the next run/check/burn. One word is a shell line\n"
    "(\"ps -ef | grep python\"); several words are an argv. Prints 'Send command to\n"
    "all workers success.', then each rank's output as '[rank N] line', then a\n"
    "line per failed rank. Exit 0 only if every rank exited 0. Ctrl-C detaches.",
    run_options, run, split_run_words};

const Command kBurnCommand{
    "Usage: atlctl burn [-t gemm|transfer|local|global|batch] [-d DUR] [-e ENVS] [-w WORKERS] "
    "[-o FILE] [--sizes SIZES]\n\n"
    "Stress test: runs atl-burn on one rank of each chosen worker (all by default)\n"
    "in a child process, with progress lines and a verdict per GPU, then 'Check\n"
    "finished.' Needs debugStop and leaves debugCommand (end it with atlctl stop).\n"
    "gemm: GEMMs, every round verified; transfer: host<->device copies with\n"
    "checksums; local: NCCL allreduce among each node's own GPUs; global:\n"
    "allreduce rounds among all workers (NCCL, one rank per GPU; a TCP ring\n"
    "between nodes without GPUs), batch: among -w's. The master prints 'Round N:\n"
    "AllReduce Perf(GB/s): Size=..., BusBW=..., AlgBW=..., MasterAddr=POD'. Two\n"
    "ranks on one GPU are refused before NCCL starts. --sizes: a list (512M,1G)\n"
    "or a sweep BEGIN:END[:FACTOR] (8M:1G:2, nccl-tests' -b/-e/-f). A pod that\n"
    "declares GPUs fails when CUDA does not see them. Exit 1 names the node\n"
    "that failed.",
    burn_options, burn};

const Command kCheckCommand{
    "Usage: atlctl check [-t gpu|allreduce|all] [-e ENVS] [-w WORKERS] [-o FILE]\n\n"
    "Built-in checks on the chosen workers: the declared GPUs are there, a kernel\n"
    "and a GEMM with known answers are right, copies round-trip, memory holds\n"
    "its patterns; NVML: no uncorrected ECC errors, no row remapping pending or\n"
    "failed, no hardware clock slowdown, temperature below the slowdown\n"
    "threshold, a full-width PCIe link; no critical Xid events.\n"
    "Prints 'All workers will be checked.', a verdict per GPU, 'Check finished.'\n"
    "and 'Check Quit.'; exit 1 names the node that failed. allreduce: a short verified allreduce "
    "among the\n"
    "chosen workers. Needs debugStop and leaves debugCommand.",
    check_options, check};

const Command kRecoverCommand{
    "Usage: atlctl recover\n\n"
    "Only from debugStop: restarts user code from scratch on every rank (same\n"
    "ranks, same environment); the job is in command again. Prints 'Task\n"
    "recovering...' then 'Task recover success.' Never uses the restart budget.",
    no_options, recover};

}  // namespace atlctl
