// atlctl: the operator's tool. Reaches the job's supervisor (--address, else
// $ATL_ADDRESS) and asks it things. Exit codes: 0 ok, 1 command failed,
// 2 usage, 3 refused in this state, 4 supervisor unreachable.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <caf/all.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <future>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/messages.hpp"
#include "atl/cli/command_line.hpp"
#include "atl/core/byte_size.hpp"
#include "atl/core/dashboard_auth.hpp"
#include "atl/core/duration.hpp"
#include "atl/core/env.hpp"
#include "atl/core/job_spec.hpp"
#include "atl/core/json_out.hpp"
#include "atl/core/log_stream.hpp"
#include "atl/core/quote.hpp"
#include "atl/core/rank_set.hpp"
#include "atl/core/suggest.hpp"
#include "atl/core/taints.hpp"
#include "atl/gpu/burn_types.hpp"
#include "atl/os/job_pointer.hpp"
#include "atl/os/job_store.hpp"
#include "atl/os/local_door.hpp"
#include "atl/os/process_title.hpp"
#include "atl/os/tls_credentials.hpp"
#include "atl/supervisor/job_controller.hpp"
#include "cli.hpp"

using namespace atlctl;

namespace {

// atlctl through the local door: atl's message types, no middleman, no TLS.
struct LocalConfig : caf::actor_system_config {
  LocalConfig() {
    atl::add_atl_message_types(*this);
    set("scheduler.policy", caf::atom("sharing"));
    set("scheduler.max-threads", size_t{1});
  }
};

const char* kTopHelp =
    "Usage: atlctl [--address HOST:PORT] [--tls-dir DIR | --insecure] COMMAND [options]\n"
    "\n"
    "Acts on the whole job through its supervisor. The address comes from\n"
    "--address, else from $ATL_ADDRESS (set in every rank and the driver), else\n"
    "from the job file the pod's node agent writes (/run/atl/job.json, else\n"
    "$XDG_RUNTIME_DIR/atl/job.json or /tmp/atl-UID/job.json; $ATL_JOB_FILE names\n"
    "another), so any shell of a job's pod needs no flags. The job's TLS\n"
    "credentials (ca.pem, cert.pem, key.pem): --tls-dir, else $ATL_TLS_DIR (set\n"
    "in every rank and the driver), else that file's.\n"
    "\n"
    "Commands:\n"
    "  status [-v] [--json]             print 'Job status:  <state>' (-v: pods and ranks)\n"
    "  logs [-r RANKS|-p PODS] [-f] [--tail N|--since D] [--timestamps] [--attempt K]\n"
    "       [--run N]                   print the ranks' output\n"
    "  stop                             stop user code (or the debug command): debugStop\n"
    "  run [-r RANKS] [-f] CMD...       run CMD on ranks (needs debugStop unless -f)\n"
    "  recover                          restart user code from scratch (from debugStop)\n"
    "  burn [-t TYPE] [-d DUR] [-e ENVS] [-w WORKERS] [-o FILE]   GPU stress test\n"
    "  check [-t gpu|allreduce|all] [-e ENVS] [-w WORKERS] [-o FILE]  built-in checks\n"
    "  debug                            as stop: park the job in debugStop\n"
    "  delete -p POD[,POD...]|all       delete pods (recreated); in command: one restart\n"
    "  events [--faults] [--json]       the job's timeline: states, faults, restarts\n"
    "  diagnose [-r RANKS] [-o FILE]    every rank's stack now, grouped; who stands apart\n"
    "  dashboard-url [--json]           the dashboard's address, with a link that logs in\n"
    "  taint -a list|set|remove [-n NODES|all]  keep ranks off nodes\n"
    "\n"
    "RANKS: all, 1,2,3, 1-8 or 0,2-4,7.\n"
    "States: pending, initializing, command, debugStop, debugCommand, restarting,\n"
    "        succeeded, failed. run/check/burn need debugStop and leave debugCommand,\n"
    "        which only atlctl stop ends; recover needs debugStop.\n"
    "Exit codes: 0 ok, 1 command failed, 2 usage, 3 refused in this state,\n"
    "            4 supervisor unreachable.\n"
    "'atlctl COMMAND --help' shows a command's options; atlctl --version, atl's version;\n"
    "source <(atlctl completion bash) (or zsh) completes commands, options and their values.\n";

// --- status --------------------------------------------------------------------

constexpr const char* kStateDirHelp =
    "a finished job, read from its head's state dir DIR (headnode --state-dir; default "
    "./atl-state/<job-id>) with no head running";

void status_options(po::options_description& desc) {
  desc.add_options()("verbose,v", "also print pods, ranks and debug runs")(
      "json", "print the supervisor's full view as JSON")(
      "output,o", po::value<std::string>(), "json (as --json) or wide (as -v), as kubectl's -o")(
      "watch,w", "print the state again each time it changes, until the job ends")(
      "state-dir", po::value<std::string>(), kStateDirHelp);
}

std::string cell(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return "-";
  const auto& v = j[key];
  return v.is_string() ? v.get<std::string>()
                       : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The job's time spent training, and what its faults cost (SPEC: hangs).
void print_goodput(const nlohmann::json& info) {
  auto g = info.find("goodput");
  if (g == info.end() || !g->is_object() || g->value("elapsed_s", 0.0) <= 0) return;
  auto secs = [&](const char* key) {
    auto v = g->find(key);
    if (v == g->end() || !v->is_number()) return std::string("-");
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", v->get<double>());
    return std::string(text);
  };
  char ratio[16];
  std::snprintf(ratio, sizeof ratio, "%.1f%%", 100 * g->value("ratio", 0.0));
  std::cout << "Goodput: " << ratio << " (training " << secs("productive_s") << " of "
            << secs("elapsed_s") << ", warm-up " << secs("warmup_s");
  const auto faults = g->value("faults", 0);
  if (faults > 0)
    std::cout << "; " << faults << (faults == 1 ? " fault" : " faults") << " cost detection "
              << secs("detection_s") << ", restart " << secs("restart_s") << ", re-warm "
              << secs("rewarm_s");
  std::cout << ")\n";
}

void print_details(const nlohmann::json& info) {
  std::cout << "Job " << cell(info, "job_id") << " (" << cell(info, "mode") << ", "
            << cell(info, "workers") << " workers x " << cell(info, "nproc_per_node")
            << " ranks), attempt " << cell(info, "attempt") << "\n";
  std::cout << "Restarts: " << cell(info, "restarts") << "/" << cell(info, "max_restarts")
            << " used" << (info.value("restart_on_failure", false) ? " (restart on failure)" : "")
            << "\n";
  for (const auto& line : info["attempts"]) std::cout << "  " << line.get<std::string>() << "\n";
  if (info.contains("failure")) std::cout << "Failure: " << cell(info, "failure") << "\n";
  print_goodput(info);
  std::cout << "\nPods:\n"
            << std::left << "  " << std::setw(34) << "NAME" << std::setw(9) << "STATE"
            << std::setw(12) << "ROLE" << std::setw(16) << "NODE" << std::setw(17) << "ADDRESS"
            << std::setw(6) << "CPUS" << std::setw(6) << "GPUS" << std::setw(10) << "MEMORY"
            << "SHM\n";
  for (const auto& p : info["pods"]) {
    auto size = [&](const char* key) {
      return p.contains(key) ? atl::format_byte_size(p[key].get<std::int64_t>()) : "-";
    };
    std::cout << "  " << std::setw(34) << cell(p, "name") << std::setw(9) << cell(p, "state")
              << std::setw(12) << cell(p, "role") << std::setw(16) << cell(p, "node")
              << std::setw(17) << cell(p, "address") << std::setw(6) << cell(p, "cpus")
              << std::setw(6) << cell(p, "gpus") << std::setw(10) << size("memory") << size("shm")
              << "\n";
  }
  // A cell padded to its column, and always a space after it (ray-head, a
  // long pod name: columns never run together).
  auto pad = [](std::string text, std::size_t width) {
    text.resize(std::max(text.size() + 1, width), ' ');
    return text;
  };
  // A running rank's figures (its own process, not atl's guard; the time
  // since its last line; lines/s and CPU% over the last 10 s; memory), and
  // its mark: stopped or uninterruptible as it is, silent, slow or straggler
  // when it stands apart from its peers.
  std::cout << "\nRanks:\n"
            << "  " << pad("RANK", 10) << pad("POD", 34) << pad("PID", 9) << pad("STATE", 18)
            << pad("LAST OUT", 9) << pad("LINES/S", 8) << pad("CPU%", 7) << pad("RSS", 10)
            << "EXIT\n";
  for (const auto& r : info["ranks"]) {
    std::string exit = !r.contains("exit_code") ? "-"
                       : r["signal"].get<int>() ? "signal " + cell(r, "signal")
                                                : cell(r, "exit_code");
    if (r.contains("note")) exit += " (" + cell(r, "note") + ")";
    const atl::StreamId stream = stream_of(r);
    std::string pid = cell(r, "pid"), state = cell(r, "state"), age = "-", rate = "-", cpu = "-",
                rss = "-";
    if (r.contains("vitals")) {
      const auto& v = r["vitals"];
      if (v.value("user_pid", 0) > 0) pid = cell(v, "user_pid");
      if (!v.value("mark", std::string()).empty()) state += " (" + cell(v, "mark") + ")";
      age = std::to_string(v.value("output_age_ms", std::int64_t{0}) / 1000) + "s";
      rate = cell(v, "lines_per_s");
      cpu = cell(v, "cpu_percent");
      rss = atl::format_byte_size(v.value("rss_bytes", std::int64_t{0}));
    }
    std::cout << "  "
              << pad(stream.kind == atl::StreamKind::rank ? std::to_string(stream.rank)
                                                          : atl::stream_name(stream),
                     10)
              << pad(cell(r, "pod"), 34) << pad(pid, 9) << pad(state, 18) << pad(age, 9)
              << pad(rate, 8) << pad(cpu, 7) << pad(rss, 10) << exit << "\n";
  }
  if (!info["taints"].empty()) {
    std::cout << "\nTainted nodes (no ranks are placed there):\n";
    for (const auto& t : info["taints"])
      std::cout << "  " << cell(t, "node") << " (" << cell(t, "source") << ": " << cell(t, "reason")
                << ")\n";
  }
  if (!info["runs"].empty()) {
    std::cout << "\nDebug runs:\n"
              << "  " << std::setw(6) << "RUN" << std::setw(9) << "TRACKED" << std::setw(7)
              << "RANKS" << std::setw(7) << "DONE"
              << "COMMAND\n";
    for (const auto& r : info["runs"]) {
      std::cout << "  " << std::setw(6) << cell(r, "run") << std::setw(9)
                << (r["tracked"].get<bool>() ? "yes" : "no (-f)") << std::setw(7)
                << cell(r, "ranks") << std::setw(7) << (r["done"].get<bool>() ? "yes" : "no")
                << cell(r, "command") << "\n";
    }
  }
}

// "CPU 1/2  GPU 0/1  memory 1.0Gi/2.0Gi  slot 1/1": reserved/total, as `ray status`.
std::string usage_line(const nlohmann::json& node) {
  auto amount = [](const std::string& name, double v) {
    if (name == "memory" || name == "shm")
      return atl::format_byte_size(static_cast<std::int64_t>(v));
    std::ostringstream out;
    out << v;
    return out.str();
  };
  std::string line;
  for (const auto& [name, total] : node["total"].items()) {
    double used = node["reserved"].value(name, 0.0);
    if (total.get<double>() == 0 && used == 0) continue;
    line += (line.empty() ? "" : "  ") + name + " " + amount(name, used) + "/" +
            amount(name, total.get<double>());
  }
  return line.empty() ? "-" : line;
}

// Driver mode: what placement groups reserve on each node, the groups, and
// the demand still waiting.
void print_placement(const nlohmann::json& cluster) {
  std::cout << "\nResources (reserved/total):\n";
  for (const auto& n : cluster["nodes"]) {
    std::cout << "  " << std::setw(34) << cell(n, "pod") << usage_line(n);
    if (n.contains("unavailable"))
      std::cout << "  (takes no bundle: " << cell(n, "unavailable") << ")";
    std::cout << "\n";
  }
  if (!cluster["groups"].empty()) {
    std::cout << "\nPlacement groups:\n"
              << "  " << std::setw(6) << "ID" << std::setw(14) << "NAME" << std::setw(15)
              << "STRATEGY" << std::setw(14) << "STATE"
              << "NODES / WHY\n";
    for (const auto& g : cluster["groups"]) {
      std::string where;
      for (const auto& n : g["nodes"]) where += (where.empty() ? "" : ",") + n.get<std::string>();
      if (g.contains("why")) where = g["why"].get<std::string>();
      std::cout << "  " << std::setw(6) << cell(g, "id") << std::setw(14)
                << (g["name"].get<std::string>().empty() ? "-" : cell(g, "name")) << std::setw(15)
                << cell(g, "strategy") << std::setw(14) << cell(g, "state") << where << "\n";
    }
  }
  if (!cluster["pending_demand"].empty()) {
    std::cout << "\nPending demand:\n";
    for (const auto& b : cluster["pending_demand"])
      std::cout << "  " << b.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
}

int cmd_status(SupervisorClient& client, const po::variables_map& vm) {
  const std::string output = vm.count("output") ? vm["output"].as<std::string>() : "";
  if (!output.empty() && output != "json" && output != "wide")
    die(kExitUsage, "status: -o: '" + output + "' is not an output (json or wide)");
  const bool as_json = vm.count("json") > 0 || output == "json";
  const bool wide = vm.count("verbose") > 0 || output == "wide";
  if (vm.count("watch")) {
    if (as_json) die(kExitUsage, "status: --watch prints lines as the state changes, not JSON");
    // kubectl get -w: a line (with -v its details) each time the state
    // changes, every change however short (the head holds the request until
    // the next one: StateFeed); done once the job has ended.
    constexpr std::int64_t kHeld = 10'000;  // ms the head holds a watch with nothing new
    std::uint64_t seen = 0;
    std::string last;
    for (;;) {
      const Answer a = client.answer_or_die(caf::make_message(atl::StateWatch{seen, kHeld}),
                                            std::chrono::milliseconds(kHeld + 10'000));
      if (a.code != 0) die(kExitFailed, "status: " + a.text);
      std::istringstream changes(a.text);
      changes >> seen;
      for (std::string now; changes >> now;) {
        if (now == "missed") {  // more changes than the head keeps came between two asks
          changes >> now;
          continue;
        }
        if (now == last) continue;
        std::cout << "Job status:  " << now << std::endl;
        if (wide)
          print_details(
              nlohmann::json::parse(client.text_or_die(caf::make_message(atl::info_atom::value))));
        last = now;
        if (now == "succeeded" || now == "failed") return kExitOk;
      }
    }
  }
  if (as_json) {
    // Indented as it came (1.4 MB at 8,000 ranks: a parse and a dump were
    // most of this command's time); parsed only when it does not balance.
    const std::string text = client.text_or_die(caf::make_message(atl::info_atom::value));
    auto indented = atl::indent_json(text);
    std::cout << (indented ? *indented : nlohmann::json::parse(text).dump(2)) << "\n";
    return kExitOk;
  }
  if (wide) {
    auto info = nlohmann::json::parse(client.text_or_die(caf::make_message(atl::info_atom::value)));
    std::cout << "Job status:  " << cell(info, "state") << "\n";
    print_details(info);
    if (info["mode"] == "driver")
      print_placement(
          nlohmann::json::parse(client.text_or_die(caf::make_message(atl::cluster_atom::value))));
    return kExitOk;
  }
  std::cout << "Job status:  " << client.text_or_die(caf::make_message(atl::status_atom::value))
            << "\n";
  return kExitOk;
}

// --- logs ----------------------------------------------------------------------

void logs_options(po::options_description& desc) {
  desc.add_options()("ranks,r", po::value<std::string>(),
                     "ranks to show: all (default), 1,2,3, 1-8, 0,2-4,7")(
      "follow,f", "keep printing new lines until the job ends")(
      "tail", po::value<long>(), "start with the last N lines of each rank")(
      "since", po::value<std::string>(),
      "only lines that came in the last DURATION (10m, 90s, 2h), by the head's clock")(
      "timestamps", "prefix each line with the time it came (UTC, ms)")(
      "attempt", po::value<int>(),
      "attempt K's logs (logs/attempt-K on the head; status -v shows the current one)")(
      "run", po::value<int>(), "show debug run N's output instead (see status -v)")(
      "pod,p", po::value<std::string>(),
      "show these pods (POD[,POD...], head, or all): each one's own log (the node agent's, the "
      "head's) then what runs there: their ranks; in ray mode each pod's Ray node, and on the "
      "head pod Ray's head and the driver")("state-dir", po::value<std::string>(), kStateDirHelp);
}

// Everything on `pod_list`'s pods (from the supervisor's info): each pod's
// own log (the head's, or its node agent's: logs/head.log, pod-worker-<i>.log)
// and then the processes it runs in this attempt. "head" names the head pod;
// a pod not in the job is a usage error.
std::vector<atl::StreamId> pod_streams(const nlohmann::json& info, const std::string& pod_list) {
  auto pods = atl::parse_worker_list(pod_list);
  if (!pods) die(kExitUsage, "logs: --pod: " + pods.error());
  const std::string head = atl::head_pod_name(info["job_id"].get<std::string>());
  if (pods->empty()) {  // all: every pod, head first
    pods->push_back(head);
    for (const auto& p : info["pods"]) pods->push_back(p["name"].get<std::string>());
  }
  std::vector<atl::StreamId> streams;
  for (auto pod : *pods) {
    if (pod == "head") pod = head;
    std::optional<atl::StreamId> own;
    if (pod == head) own = atl::StreamId::head_log();
    for (size_t i = 0; i < info["pods"].size(); ++i)
      if (info["pods"][i]["name"] == pod)
        own = atl::StreamId::pod_log(static_cast<std::int32_t>(i));
    if (!own) die(kExitUsage, "logs: --pod: '" + pod + "' is not a pod of this job");
    streams.push_back(*own);
    for (const auto& r : info["ranks"])
      if (r["pod"] == pod) streams.push_back(stream_of(r));
  }
  return streams;
}

int cmd_logs(SupervisorClient& client, const po::variables_map& vm) {
  if (vm.count("pod") && (vm.count("run") || vm.count("ranks")))
    die(kExitUsage, "logs: --pod cannot be combined with -r or --run");
  // --pod needs every pod and rank; the others only the job's shape (a page
  // of no ranks, pods or runs: a job of 32,000 ranks answers in bytes).
  const bool whole = vm.count("pod") > 0;
  auto info = nlohmann::json::parse(client.text_or_die(
      whole ? caf::make_message(atl::info_atom::value)
            : caf::make_message(atl::info_atom::value, atl::StatusPage{0, 0, 0, 0, 0, 0})));
  std::vector<atl::StreamId> streams;
  if (vm.count("pod")) {
    streams = pod_streams(info, vm["pod"].as<std::string>());
  } else if (vm.count("run")) {
    // The run's own ranks, from its status (kept or dropped, the supervisor
    // says which), narrowed by -r.
    const std::int32_t run = vm["run"].as<int>();
    RunAnswer found =
        client.run_answer_or_die(caf::make_message(atl::RunWait{run, 0}), std::chrono::seconds(15));
    if (found.code != 0) die(found.code, "logs: --run: " + found.text);
    // A run's targets: spmd's ranks, else one per worker pod.
    int world = info["mode"] == "spmd" ? info["world_size"].get<int>() : info["workers"].get<int>();
    auto ranks =
        atl::parse_rank_set(vm.count("ranks") ? vm["ranks"].as<std::string>() : "all", world);
    if (!ranks) die(kExitUsage, "logs: -r: " + ranks.error());
    for (const auto& r : found.status.ranks)
      if (std::find(ranks->begin(), ranks->end(), r.rank) != ranks->end())
        streams.push_back(atl::StreamId::of_run(run, r.rank));
  } else if (info["mode"] == "driver" || (info["mode"] == "ray" && !vm.count("ranks"))) {
    if (vm.count("ranks")) die(kExitUsage, "logs: a driver-mode job has no ranks: drop -r");
    streams.push_back(atl::StreamId::driver());
  } else {
    // Ray mode with -r: rank k is worker pod k's Ray node.
    int world = info["mode"] == "ray" ? info["workers"].get<int>() : info["world_size"].get<int>();
    auto ranks =
        atl::parse_rank_set(vm.count("ranks") ? vm["ranks"].as<std::string>() : "all", world);
    if (!ranks) die(kExitUsage, "logs: -r: " + ranks.error());
    for (int rank : *ranks) streams.push_back(atl::StreamId::of_rank(rank));
  }
  long tail = vm.count("tail") ? vm["tail"].as<long>() : -1;
  if (vm.count("tail") && tail < 0) die(kExitUsage, "logs: --tail: must not be negative");
  if (vm.count("tail") && vm.count("since"))
    die(kExitUsage, "logs: --tail and --since cannot be combined (choose one start)");
  const bool stamped = vm.count("timestamps") > 0;
  // The attempt read: the current one unless asked; a follow names it, so
  // that a restart (a new attempt, its files from byte 0) is seen as one.
  std::int32_t attempt = vm.count("follow") ? info.value("attempt", 0) : 0;
  if (vm.count("attempt")) {
    attempt = vm["attempt"].as<int>();
    const int current = info.value("attempt", 0);
    if (attempt < 1 || attempt > current)
      die(kExitUsage,
          "logs: --attempt " + std::to_string(attempt) + ": the job has had " +
              (current == 1 ? std::string("1 attempt") : std::to_string(current) + " attempts") +
              " (1.." + std::to_string(current) + ")");
    if (vm.count("follow") && attempt != current)
      die(kExitUsage, "logs: --follow shows the current attempt; drop it or --attempt");
  }

  std::map<atl::StreamId, std::int64_t> offsets;
  constexpr std::int64_t kReadMax = 1 << 20;
  // Reads every stream from its offset to the current end, all of them in one
  // round trip per MiB (read_many: streams in order, so each stream's bytes
  // still come out whole before the next's); false if the supervisor is gone.
  auto drain = [&]() -> bool {
    while (true) {
      std::vector<std::int64_t> from;
      for (const auto& stream : streams) from.push_back(offsets[stream]);
      auto got =
          client.read_logs({atl::LogRead::from, streams, from, kReadMax, 0, 0, attempt, stamped});
      if (!got) return false;
      if (got->empty()) break;
      for (auto& piece : *got) {
        print_prefixed(piece.stream, piece.data);
        offsets[piece.stream] = piece.next_offset;
      }
    }
    std::cout.flush();
    return true;
  };
  if (tail >= 0) {
    for (const auto& stream : streams) {
      auto got = client.read_logs({atl::LogRead::tail,
                                   {stream},
                                   {},
                                   0,
                                   static_cast<std::int64_t>(tail),
                                   0,
                                   attempt,
                                   stamped});
      if (!got || got->size() != 1)
        die(kExitUnreachable, "the supervisor went away while reading logs");
      print_prefixed(stream, got->front().data);
      offsets[stream] = got->front().next_offset;
    }
  }
  if (vm.count("since")) {
    auto span = atl::parse_duration(vm["since"].as<std::string>());
    if (!span) die(kExitUsage, "logs: --since: " + span.error());
    const std::int64_t since_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count() -
                                  span->count();
    auto starts = client.read_logs({atl::LogRead::since, streams, {}, 0, 0, since_ms, attempt});
    if (!starts || starts->size() != streams.size())
      die(kExitUnreachable, "the supervisor went away while reading logs");
    for (const auto& start : *starts) offsets[start.stream] = start.next_offset;
  }
  if (!drain()) die(kExitUnreachable, "the supervisor went away while reading logs");
  // The current attempt's number (0 when the head cannot say).
  auto current_attempt = [&]() -> std::int32_t {
    auto now =
        client.text(caf::make_message(atl::info_atom::value, atl::StatusPage{0, 0, 0, 0, 0, 0}));
    if (!now) return 0;
    auto j = nlohmann::json::parse(*now, nullptr, false);
    return j.is_object() ? j.value("attempt", 0) : 0;
  };
  while (vm.count("follow")) {
    auto state = client.text(caf::make_message(atl::status_atom::value));
    if (!state || !drain()) {
      std::cerr << "atlctl: the supervisor is gone; stopped following\n";
      break;
    }
    // A restart or a recover began a new attempt: the rest of this one
    // (it has ended: its files are whole now), then each newer one from its
    // first byte, its start marked.
    for (std::int32_t now = current_attempt(); attempt > 0 && now > attempt;) {
      if (!drain()) break;
      ++attempt;
      offsets.clear();
      std::cout << "--- attempt " << attempt << " ---\n";
      if (!drain()) break;
    }
    if (*state == "succeeded" || *state == "failed") {
      drain();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  std::cout.flush();
  return kExitOk;
}

std::string utc_time(std::int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  char ms[8];
  std::snprintf(ms, sizeof ms, ".%03dZ", static_cast<int>(unix_ms % 1000));
  return std::string(when) + ms;
}

// --- taint ---------------------------------------------------------------------

void taint_options(po::options_description& desc) {
  desc.add_options()("action,a", po::value<std::string>(), "list, set or remove")(
      "nodes,n", po::value<std::string>(),
      "NODE[,NODE...] or all (set and remove; also --nodeList)");
  guide_aliases(desc, {{"nodeList", "nodes"}});
}

int cmd_taint(SupervisorClient& client, const po::variables_map& vm) {
  if (!vm.count("action")) die(kExitUsage, "taint: -a list|set|remove is required");
  const std::string action = vm["action"].as<std::string>();
  const std::string nodes = vm.count("nodes") ? vm["nodes"].as<std::string>() : "";
  if (action != "list" && action != "set" && action != "remove")
    die(kExitUsage, "taint: -a: unknown action " + atl::quote(action) + " (list, set or remove)");
  if (action == "list" && vm.count("nodes"))
    die(kExitUsage, "taint: -n is only for set and remove");
  if (action != "list" && !vm.count("nodes"))
    die(kExitUsage, "taint: -a " + action + " needs -n NODE[,NODE...] or -n all");
  if (action != "list") {
    if (auto parsed = atl::parse_node_list(nodes); !parsed)
      die(kExitUsage, "taint: -n: " + parsed.error());
  }
  Answer answer = client.answer_or_die(caf::make_message(atl::taint_atom::value, action, nodes),
                                       std::chrono::seconds(10));
  if (answer.code != 0) die(answer.code, "taint: " + answer.text);
  if (action != "list") {
    std::cout << (action == "set" ? "Set taint on nodes: " : "Removed taint from nodes: ") << nodes
              << "\n";
    return kExitOk;
  }
  auto taints = nlohmann::json::parse(answer.text);
  if (taints.empty()) {
    std::cout << "No tainted nodes.\n";
    return kExitOk;
  }
  std::cout << std::left << std::setw(20) << "NODE" << std::setw(10) << "SOURCE" << std::setw(26)
            << "SINCE"
            << "REASON\n";
  for (const auto& t : taints)
    std::cout << std::setw(20) << cell(t, "node") << std::setw(10) << cell(t, "source")
              << std::setw(26) << utc_time(t["since_ms"].get<std::int64_t>()) << cell(t, "reason")
              << "\n";
  return kExitOk;
}

// --- events --------------------------------------------------------------------

void events_options(po::options_description& desc) {
  desc.add_options()("json", "print the events as a JSON array")(
      "faults",
      "only what went wrong and what atl did about it (fault, hang, restart, taint, "
      "delete)")("state-dir", po::value<std::string>(), kStateDirHelp);
}

void diagnose_options(po::options_description& desc) {
  desc.add_options()("ranks,r", po::value<std::string>()->default_value("all"),
                     "ranks to take: all, 1,2,3, 1-8, 0,2-4,7")(
      "json", "print the groups, outliers and each rank's top frame as JSON")(
      "output,o", po::value<std::string>(),
      "also write the whole diagnosis, every rank's full stack included, to this JSON file");
}

// The timeline, from the head or a state dir: [{time_ms, kind, text, fault}].
int print_events(nlohmann::json events, const po::variables_map& vm) {
  if (vm.count("faults")) {
    nlohmann::json kept = nlohmann::json::array();
    for (auto& e : events)
      if (e.value("fault", false)) kept.push_back(std::move(e));
    events = std::move(kept);
  }
  if (vm.count("json")) {
    std::cout << events.dump(2) << "\n";
    return kExitOk;
  }
  // The kind in a column of 10 ("terminal" and "restart" are the longest), and
  // always a space after it.
  for (const auto& e : events)
    std::cout << utc_time(e["time_ms"].get<std::int64_t>()) << "  " << std::left << std::setw(9)
              << e["kind"].get<std::string>() << " " << e["text"].get<std::string>() << "\n";
  return kExitOk;
}

int cmd_events(SupervisorClient& client, const po::variables_map& vm) {
  return print_events(
      nlohmann::json::parse(client.text_or_die(caf::make_message(atl::events_atom::value))), vm);
}

// --- a finished job's state dir (--state-dir) -------------------------------------

// logs, events and status of a job whose head is gone, read from its state
// dir: the logs/attempt-K/ files as the head wrote them, the events and the
// state from state.db. Nothing there is changed.
namespace offline {

std::string dir_of(const po::variables_map& vm) {
  std::string dir = vm["state-dir"].as<std::string>();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  struct stat st {};
  if (dir.empty() || ::stat((dir + "/state.db").c_str(), &st) != 0)
    die(kExitUsage, "--state-dir " + dir +
                        ": no state.db there: not a head's state dir (headnode --state-dir; "
                        "default ./atl-state/<job-id>)");
  return dir;
}

atl::os::JobRecord record_of(const std::string& dir) {
  auto store = atl::os::JobStore::open(dir + "/state.db");
  if (!store) die(kExitFailed, "--state-dir " + dir + ": " + store.error());
  auto ids = (*store)->job_ids();
  if (!ids) die(kExitFailed, "--state-dir " + dir + ": " + ids.error());
  if (ids->size() != 1)
    die(kExitFailed, "--state-dir " + dir + ": " + std::to_string(ids->size()) +
                         " jobs stored there; a head's state dir holds one");
  auto record = (*store)->load(ids->front());
  if (!record) die(kExitFailed, "--state-dir " + dir + ": " + record.error());
  if (!*record) die(kExitFailed, "--state-dir " + dir + ": job " + ids->front() + " not found");
  return std::move(**record);
}

int status(const po::variables_map& vm) {
  const std::string dir = dir_of(vm);
  const atl::os::JobRecord r = record_of(dir);
  const std::string output = vm.count("output") ? vm["output"].as<std::string>() : "";
  if (!output.empty() && output != "json" && output != "wide")
    die(kExitUsage, "status: -o: '" + output + "' is not an output (json or wide)");
  // An ended job does not change: --watch prints it once.
  if (vm.count("json") || output == "json") {
    nlohmann::json faults = nlohmann::json::array();
    for (const auto& f : r.faults)
      faults.push_back({{"kind", std::string(atl::to_string(f.kind))},
                        {"pod", f.pod},
                        {"detail", f.detail},
                        {"attempt", f.attempt}});
    std::cout << nlohmann::json{{"state", r.state},
                                {"attempt", r.attempt},
                                {"restarts", r.restarts},
                                {"faults", faults}}
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  std::cout << "Job status:  " << r.state << "\n";
  if (vm.count("verbose") || output == "wide") {
    std::cout << "Attempts: " << r.attempt << "; restarts used: " << r.restarts << "\n";
    for (const auto& f : r.faults)
      std::cout << "  attempt " << f.attempt << ": " << std::string(atl::to_string(f.kind)) << ": "
                << f.detail << "\n";
  }
  return kExitOk;
}

int events(const po::variables_map& vm) {
  const std::string dir = dir_of(vm);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : record_of(dir).events)
    out.push_back({{"time_ms", e.unix_ms},
                   {"kind", e.kind},
                   {"text", e.text},
                   {"fault", atl::supervisor::is_fault_kind(e.kind)}});
  return print_events(std::move(out), vm);
}

int logs(const po::variables_map& vm) {
  for (const char* live : {"follow", "since", "timestamps", "run", "pod"})
    if (vm.count(live))
      die(kExitUsage, std::string("logs --state-dir: --") + live +
                          " needs the job's head; read without it, or ask a running head");
  const std::string dir = dir_of(vm);
  int attempt = 0;
  if (vm.count("attempt")) {
    attempt = vm["attempt"].as<int>();
  } else if (DIR* d = ::opendir((dir + "/logs").c_str())) {
    while (dirent* e = ::readdir(d)) {
      int k = 0;
      if (std::sscanf(e->d_name, "attempt-%d", &k) == 1) attempt = std::max(attempt, k);
    }
    ::closedir(d);
  }
  const std::string logs = dir + "/logs/attempt-" + std::to_string(attempt);
  DIR* d = attempt > 0 ? ::opendir(logs.c_str()) : nullptr;
  if (!d)
    die(kExitUsage, "logs --state-dir: " + (attempt > 0 ? logs + " does not exist"
                                                        : dir + " holds no attempt's logs"));
  // The user code's streams there: ranks in order, else the driver.
  std::vector<atl::StreamId> found;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    int rank = -1;
    char tail = 0;
    if (std::sscanf(name.c_str(), "rank-%d.lo%c", &rank, &tail) == 2 && rank >= 0 &&
        name == "rank-" + std::to_string(rank) + ".log")
      found.push_back(atl::StreamId::of_rank(rank));
    else if (name == atl::stream_name(atl::StreamId::driver()) + ".log")
      found.push_back(atl::StreamId::driver());
  }
  ::closedir(d);
  std::sort(found.begin(), found.end());
  if (vm.count("ranks")) {
    int world = 0;
    for (const auto& s : found)
      if (s.kind == atl::StreamKind::rank) world = std::max(world, s.rank + 1);
    auto ranks = atl::parse_rank_set(vm["ranks"].as<std::string>(), world);
    if (!ranks) die(kExitUsage, "logs: -r: " + ranks.error());
    found.clear();
    for (int r : *ranks) found.push_back(atl::StreamId::of_rank(r));
  }
  const long tail = vm.count("tail") ? vm["tail"].as<long>() : -1;
  if (vm.count("tail") && tail < 0) die(kExitUsage, "logs: --tail: must not be negative");
  for (const auto& stream : found) {
    std::ifstream in(logs + "/" + atl::stream_name(stream) + ".log", std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (tail >= 0) {
      std::size_t at = data.size();
      long lines = 0;
      if (at > 0 && data[at - 1] == '\n') --at;
      while (at > 0 && lines < tail) {
        if (data[at - 1] == '\n') ++lines;
        if (lines < tail) --at;
      }
      data = tail == 0 ? std::string() : data.substr(at);
    }
    print_prefixed(stream, data);
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace offline

// --- diagnose ------------------------------------------------------------------

std::string rank_list_text(const nlohmann::json& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i ? "," : "") + std::to_string(ranks[i].get<int>());
  return out;
}

// Every rank's stack now (the hang watch's diagnosis, on demand, without
// stopping anything): the groups of identical stacks by size, the outliers.
int cmd_diagnose(SupervisorClient& client, const po::variables_map& vm) {
  // The file first: a path that cannot be written costs no node a stack. It
  // is opened without truncating, and replaced only by a diagnosis.
  std::string path;
  bool created = false;
  if (vm.count("output")) {
    path = vm["output"].as<std::string>();
    created = ::access(path.c_str(), F_OK) != 0;
    if (!std::ofstream(path, std::ios::app))
      die(kExitUsage, "diagnose: -o: cannot write " + path + ": " + std::strerror(errno));
  }
  // Each node takes its ranks' stacks within 5 s; the head waits 20 s at most.
  Answer a = client.answer_or_die(
      caf::make_message(atl::Diagnose{vm["ranks"].as<std::string>(), !path.empty()}),
      std::chrono::seconds(30));
  if (a.code != 0) {
    if (created) std::remove(path.c_str());
    die(a.code, "diagnose: " + a.text);
  }
  auto d = nlohmann::json::parse(a.text);
  if (!path.empty()) {
    std::ofstream file(path, std::ios::trunc);
    file << d.dump(2) << "\n";
    file.close();
    if (!file) die(kExitFailed, "diagnose: -o: writing " + path + " failed");
  }
  if (vm.count("json")) {
    if (!path.empty())
      for (auto& r : d["ranks"]) r.erase("stack");
    std::cout << d.dump(2) << "\n";
    return kExitOk;
  }
  std::size_t with_stack = 0;
  for (const auto& g : d["groups"]) with_stack += g["ranks"].size();
  std::cout << "Stacks of " << with_stack << " of " << d["ranks"].size() << " ranks, by group:\n";
  for (const auto& g : d["groups"])
    std::cout << "  " << std::left << std::setw(24) << rank_list_text(g["ranks"])
              << g["top"].get<std::string>() << "\n";
  for (const auto& r : d["ranks"])
    if (r.contains("error"))
      std::cout << "  rank " << r["rank"].get<int>() << " (" << r["pod"].get<std::string>()
                << "): no stack: " << r["error"].get<std::string>() << "\n";
  if (d["outliers"].empty()) {
    std::cout << "No rank stands apart.\n";
  } else {
    std::cout << "Outliers: " << d["why"].get<std::string>() << "\n";
    for (const auto& [pod, gpus] : d["outlier_gpus"].items())
      std::cout << "  " << pod << " GPUs: " << gpus.get<std::string>() << "\n";
  }
  // Where the ranks stand in their collectives (torch's flight recorder).
  std::size_t recorded = 0;
  std::string no_record;
  for (const auto& r : d["ranks"]) {
    if (r.contains("collectives")) ++recorded;
    if (no_record.empty() && r.contains("collectives_error"))
      no_record = r["collectives_error"].get<std::string>();
  }
  const auto& findings = d["collectives"]["findings"];
  if (!findings.empty()) {
    std::cout << "Collectives (flight records of " << recorded << " ranks):\n";
    for (const auto& f : findings) std::cout << "  " << f.get<std::string>() << "\n";
  } else if (recorded > 0) {
    std::cout << "Collectives (flight records of " << recorded
              << " ranks): none in flight, nobody behind.\n";
  } else if (!no_record.empty()) {
    std::cout << "Collectives: no flight record (" << no_record << ").\n";
  }
  if (!path.empty()) std::cout << "Every rank's whole stack: " << path << "\n";
  return kExitOk;
}

// --- dashboard-url -------------------------------------------------------------

void dashboard_options(po::options_description& desc) {
  desc.add_options()("json", "print {\"url\", \"token\"} as JSON")(
      "no-token", "print the bare URL (the login page asks for the token)");
}

int cmd_dashboard_url(SupervisorClient& client, const po::variables_map& vm) {
  if (vm.count("json") && vm.count("no-token"))
    die(kExitUsage, "dashboard-url: --json and --no-token exclude each other");
  Answer answer =
      client.answer_or_die(caf::make_message(atl::dashboard_atom::value), std::chrono::seconds(10));
  if (answer.code != 0) die(answer.code, "dashboard-url: " + answer.text);
  auto j = nlohmann::json::parse(answer.text);
  if (vm.count("json")) {
    std::cout << j.dump(2) << "\n";
  } else if (vm.count("no-token")) {
    std::cout << j["url"].get<std::string>() << "\n";
    if (j.contains("ray")) std::cout << "Ray's dashboard: " << j["ray"].get<std::string>() << "\n";
  } else {
    // The login link: the page trades the token for a session cookie and
    // drops it from the address bar.
    const std::string url = j["url"].get<std::string>();
    const std::string token = j["token"].get<std::string>();
    std::cout << atl::login_link(url, token) << "\n";
    // Ray mode: the same login, landing on Ray's dashboard.
    if (j.contains("ray"))
      std::cout << "Ray's dashboard: " << atl::login_link(url, token, "/ray/") << "\n";
  }
  return kExitOk;
}

// --- dispatch ------------------------------------------------------------------

// Parses a command's own flags before any connection: --help and usage errors
// never need a supervisor.
// `atlctl completion bash`: a bash completion script made from the commands'
// own option tables (so it never lags behind them): commands first, then the
// chosen command's options. `source <(atlctl completion bash)`.
// The values an option of a command takes, offered after it (`burn -t
// <TAB>`): the burn and check types from the types themselves.
struct OptionValues {
  std::string command;
  std::vector<std::string> spellings;  // short, long and the guide's names
  std::string words;
};

std::vector<OptionValues> option_values() {
  using atl::gpu::BurnType;
  using atl::gpu::CheckType;
  std::string burn_types, check_types;
  for (BurnType t :
       {BurnType::gemm, BurnType::transfer, BurnType::local, BurnType::global, BurnType::batch})
    burn_types += std::string(atl::gpu::to_string(t)) + " ";
  for (CheckType t : {CheckType::gpu, CheckType::allreduce, CheckType::all})
    check_types += std::string(atl::gpu::to_string(t)) + " ";
  burn_types.pop_back();
  check_types.pop_back();
  return {{"burn", {"-t", "--type", "--burnType"}, burn_types},
          {"check", {"-t", "--type", "--checkType"}, check_types},
          {"taint", {"-a", "--action"}, "list set remove"},
          {"status", {"-o", "--output"}, "json wide"}};
}

std::string bash_completion(const std::map<std::string, Command>& commands) {
  std::string names;
  std::string cases;
  const auto values = option_values();
  for (const auto& [name, command] : commands) {
    names += name + " ";
    po::options_description desc;
    command.options(desc);
    desc.add_options()("help,h", "");
    std::string words;
    for (const auto& opt : desc.options()) {
      std::string shorter =
          opt->canonical_display_name(po::command_line_style::allow_dash_for_short);
      if (shorter.size() == 2 && shorter[0] == '-') words += shorter + " ";
      if (!opt->long_name().empty()) words += "--" + opt->long_name() + " ";
    }
    words.pop_back();
    std::string after;  // the values of an option just typed
    for (const auto& v : values) {
      if (v.command != name) continue;
      std::string spelled;
      for (const auto& s : v.spellings) spelled += (spelled.empty() ? "" : "|") + s;
      after += " " + spelled + ") words=\"" + v.words + "\" ;;";
    }
    cases += "    " + name + ") words=\"" + words + "\"" +
             (after.empty() ? "" : "; case $prev in" + after + " esac") + " ;;\n";
  }
  return "# bash completion for atlctl: source <(atlctl completion bash)\n"
         "_atlctl() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd= words i\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    case ${COMP_WORDS[i]} in\n"
         "      --address|-a|--tls-dir) ((i++)) ;;\n"
         "      -*) ;;\n"
         "      *) cmd=${COMP_WORDS[i]}; break ;;\n"
         "    esac\n"
         "  done\n"
         "  case $cmd in\n"
         "    '') words=\"" +
         names + "completion --address --tls-dir --insecure --help --version\" ;;\n" + cases +
         "    completion) words=\"bash zsh\" ;;\n"
         "    *) words= ;;\n"
         "  esac\n"
         "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
         "}\n"
         "complete -o default -F _atlctl atlctl\n";
}

po::variables_map parse_command(const std::string& name, const Command& command,
                                std::vector<std::string> args) {
  std::vector<std::string> words;
  if (command.split_words) words = command.split_words(args);
  po::options_description desc("Options");
  command.options(desc);
  desc.add_options()("help,h", "show this help");
  po::variables_map vm;
  try {
    auto parsed = po::command_line_parser(args).options(desc).run();
    // A word no option takes was silently dropped (`delete -p POD0 POD1`
    // deleted POD0 only): refused, naming it.
    for (const auto& o : parsed.options) {
      if (!o.string_key.empty() && o.position_key < 0) continue;
      std::string word = o.original_tokens.empty() ? o.value.empty() ? "" : o.value.front()
                                                   : o.original_tokens.front();
      die(kExitUsage, name + ": unexpected word '" + word +
                          "': each option takes one word (a list is comma-separated, e.g. a,b)");
    }
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    die(kExitUsage, name + ": " + e.what() + atl::cli::option_hint(e.get_option_name(), desc));
  } catch (const po::invalid_command_line_syntax& e) {
    if (e.kind() == po::invalid_command_line_syntax::empty_adjacent_parameter)
      die(kExitUsage, name + ": " + e.get_option_name() + ": the value is empty");
    die(kExitUsage, name + ": " + e.what());
  } catch (const po::error& e) {
    die(kExitUsage, name + ": " + e.what());
  }
  resolve_guide_aliases(vm, name);
  if (vm.count("help")) {
    std::cout << command.usage << "\n\n" << desc << "\n";
    std::exit(kExitOk);
  }
  if (!words.empty()) vm.insert({"words", po::variable_value(words, false)});
  return vm;
}

// kubectl's, Ray's and torchrun's commands a hand types out of habit: what
// atlctl does instead (nothing when `word` is none of them).
std::optional<std::string> other_tools_word(const std::string& word) {
  static const std::map<std::string, std::string> words{
      {"exec",
       ": atlctl runs a command on ranks with 'atlctl run -f -r RANKS CMD' (a shell in a pod: "
       "the dashboard's terminal)"},
      {"get", ": 'atlctl status -v' lists the pods and ranks (-o json or -o wide)"},
      {"describe", ": 'atlctl status -v' and 'atlctl events' say what the job is and did"},
      {"top", ": 'atlctl status -v' shows each rank's CPU, memory and output rate"},
      {"submit", ": a job is run by 'headnode [options] -- CMD', one per job"},
      {"attach", ": a shell in a pod is the dashboard's terminal (atlctl dashboard-url)"},
  };
  auto it = words.find(word);
  if (it == words.end()) return std::nullopt;
  return it->second;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string address_text;
  if (const char* env = std::getenv("ATL_ADDRESS")) address_text = env;
  std::string tls_dir;
  bool insecure = false;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::cout << kTopHelp;
      return kExitOk;
    }
    if (a == "--version") {
      std::cout << atl::cli::version_line("atlctl") << "\n";
      return kExitOk;
    }
    if (a == "--address" || a == "-a") {
      if (i + 1 >= args.size()) die(kExitUsage, "--address needs HOST:PORT");
      address_text = args[++i];
    } else if (a.rfind("--address=", 0) == 0) {
      address_text = a.substr(10);
    } else if (a == "--tls-dir") {
      if (i + 1 >= args.size()) die(kExitUsage, "--tls-dir needs DIR");
      tls_dir = args[++i];
    } else if (a.rfind("--tls-dir=", 0) == 0) {
      tls_dir = a.substr(10);
    } else if (a == "--insecure") {
      insecure = true;
    } else if (!a.empty() && a[0] == '-') {
      die(kExitUsage, "unknown option '" + a + "'" +
                          atl::did_you_mean(
                              a, {"--address", "--tls-dir", "--insecure", "--help", "--version"}) +
                          " (see atlctl --help)");
    } else {
      break;
    }
  }
  if (i >= args.size()) die(kExitUsage, "no command given (see atlctl --help)");
  std::string command = args[i];
  // The title says "atlctl run", not the command it sends: the guide's
  // cleanup (`atlctl run "ps -ef | grep python | ... | xargs kill -9"`) run
  // on a pod's host must not find its own atlctl (process_title.hpp).
  atl::os::set_process_title({argv[0], command});
  std::vector<std::string> rest(args.begin() + static_cast<long>(i) + 1, args.end());
  const std::map<std::string, Command> commands = {
      {"status",
       {"Usage: atlctl status [-v | -o wide] [--json | -o json] [-w]\n\nPrints 'Job status:  "
        "<state>'; with -w again each time it changes, until the job ends.",
        status_options, cmd_status}},
      {"logs",
       {"Usage: atlctl logs [-r RANKS | -p PODS] [-f] [--tail N | --since D] [--timestamps]\n"
        "                   [--attempt K] [--run N]\n\n"
        "Prints the ranks' output (the driver's in driver and ray mode), each line\n"
        "prefixed with '[rank N] '. With --run N: debug run N's output (atlctl run).\n"
        "With -p: everything running on those pods (in ray mode their Ray nodes).\n"
        "Times are when the head took each line in (UTC); the files hold the bytes\n"
        "as written, the times beside them (logs/attempt-K/<stream>.times; a\n"
        "stream's first chunk is timed by its .log file's birth).",
        logs_options, cmd_logs}},
      {"stop", kStopCommand},
      {"run", kRunCommand},
      {"recover", kRecoverCommand},
      {"burn", kBurnCommand},
      {"check", kCheckCommand},
      {"debug", kDebugCommand},
      {"delete", kDeleteCommand},
      {"taint",
       {"Usage: atlctl taint -a list|set|remove [-n NODE[,NODE...]|all]\n\n"
        "Marks nodes (the machines pods run on: NODE in status -v) so that no rank\n"
        "is placed there from the next (re)start on; a pod on a tainted node idles.\n"
        "list shows user- and platform-set taints (a failed pre-flight or check, a\n"
        "node lost twice in a row). Taints belong to this job and survive its\n"
        "restarts. An unknown node, or removing one that is not tainted, refuses\n"
        "the whole command.",
        taint_options, cmd_taint}},
      {"events",
       {"Usage: atlctl events [--faults] [--json]\n\n"
        "Prints the job's timeline, oldest first: state changes, faults with their\n"
        "reasons, restarts, deleted and rejoined pods. Times are UTC. --faults keeps\n"
        "what went wrong and what atl did about it (fault, hang, restart, taint, delete).",
        events_options, cmd_events}},
      {"diagnose",
       {"Usage: atlctl diagnose [-r RANKS] [--json] [-o FILE]\n\n"
        "Takes every rank's stack now (or those of RANKS): py-spy for Python ranks\n"
        "(never stops them), else gdb (stops each for its attach), each node within\n"
        "5 s; both from the node's PATH or atl's install only. Groups identical\n"
        "stacks and names the ranks that stand apart (the hang watch does the same\n"
        "when a job is silent for --hang-timeout). -o writes the whole diagnosis,\n"
        "each rank's full stack included, to FILE as JSON.",
        diagnose_options, cmd_diagnose}},
      {"dashboard-url",
       {"Usage: atlctl dashboard-url [--json | --no-token]\n\n"
        "Prints the head's dashboard address with a link that logs in\n"
        "(https://HOST:PORT/login?token=TOKEN): open it in a browser that reaches\n"
        "the head (kubectl port-forward, or the platform's proxy). The token is the\n"
        "job's (<state-dir>/dashboard-token on the head): keep the link to yourself.",
        dashboard_options, cmd_dashboard_url}},
  };
  if (command == "completion") {
    if (rest.size() != 1 || (rest[0] != "bash" && rest[0] != "zsh"))
      die(kExitUsage, "completion: say which shell: atlctl completion bash (or zsh)");
    // zsh runs bash's script through its bashcompinit (compinit first).
    if (rest[0] == "zsh")
      std::cout << "# zsh completion for atlctl: source <(atlctl completion zsh)\n"
                   "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit -u; }\n"
                   "autoload -U +X bashcompinit && bashcompinit\n";
    std::cout << bash_completion(commands);
    return kExitOk;
  }
  auto it = commands.find(command);
  if (it == commands.end()) {
    std::vector<std::string> names{"completion"};
    for (const auto& [name, c] : commands) names.push_back(name);
    die(kExitUsage, "unknown command '" + command + "'" +
                        other_tools_word(command).value_or(atl::did_you_mean(command, names)) +
                        " (see atlctl --help)");
  }
  po::variables_map vm = parse_command(command, it->second, rest);
  // A finished job's state dir: read there, no head asked.
  if (vm.count("state-dir")) {
    if (command == "logs") return offline::logs(vm);
    if (command == "events") return offline::events(vm);
    return offline::status(vm);
  }
  // --address > $ATL_ADDRESS > the job file the pod's node agent (or the head)
  // published; the credentials likewise: flags > environment > that file.
  const char* env_tls = std::getenv("ATL_TLS_DIR");
  const char* env_insecure = std::getenv("ATL_INSECURE");
  bool tls_given = !tls_dir.empty() || insecure || (env_tls && *env_tls) ||
                   (env_insecure && std::string(env_insecure) == "1");
  if (address_text.empty() || !tls_given) {
    std::string path;
    const char* env_job = std::getenv("ATL_JOB_ID");
    auto pointer = atl::os::find_job_pointer({env_job ? env_job : "", address_text}, &path);
    if (pointer && !*pointer && address_text.empty())
      die(kExitUsage, "no supervisor address: " + pointer->error());
    if (pointer && *pointer) {
      if (address_text.empty()) address_text = (*pointer)->address;
      if (!tls_given) {
        if ((*pointer)->insecure)
          insecure = true;
        else
          tls_dir = (*pointer)->tls_dir;
      }
    }
  }
  if (address_text.empty()) {
    die(kExitUsage,
        "no supervisor address: pass --address HOST:PORT, set ATL_ADDRESS, or run in a pod of "
        "the job (its node agent writes " +
            atl::os::job_pointer_paths().front() + ")");
  }
  auto address = atl::parse_host_port(address_text);
  if (!address) die(kExitUsage, "--address: " + address.error());

  auto dir = atl::os::choose_tls_dir(tls_dir, insecure);
  if (!dir) die(kExitUsage, dir.error());
  if (insecure) std::cerr << "atlctl: warning: --insecure: TLS is off\n";
  // In the head's pod: through its local door, with an actor system that
  // only (de)serializes (no network, no TLS start-up, no handshake).
  if (const char* d = std::getenv("ATL_LOCAL_DOOR"); !d || std::string(d) != "off") {
    if (auto ca_pem = atl::os::door_ca(*dir ? atl::os::tls_files_in(**dir).ca : "")) {
      if (auto door = open_local_door(*address, *ca_pem)) {
        LocalConfig cfg;
        caf::actor_system sys{cfg};
        SupervisorClient client(sys, *address, *door);
        return it->second.run(client, vm);
      }
    }
  }
  std::optional<atl::os::TlsFiles> tls;
  std::future<atl::Expected<atl::os::TlsFiles>> loaded;  // while the actor system starts
  if (*dir) {
    tls = atl::os::tls_files_in(**dir);
    loaded = atl::os::load_tls_credentials_async(**dir);
  }

  atl::AtlSystemConfig cfg{tls};
  caf::actor_system sys{cfg};
  if (loaded.valid()) {
    if (auto ready = loaded.get(); !ready) die(kExitUsage, ready.error());
  }
  SupervisorClient client(sys, *address);
  return it->second.run(client, vm);
}
