// workernode: a worker pod's process. Joins the head, hosts the ranks' Executors
// and exits with the job's outcome (0 succeeded, 1 failed; 2 refused or bad
// usage, 3 head unreachable or lost). Its main, also run by headnode in a
// local pod it forks (workernode_main.hpp).
#include "workernode_main.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <cstdio>
#include <future>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/exit_words.hpp"
#include "atl/actors/local_door.hpp"
#include "atl/actors/node_agent.hpp"
#include "atl/actors/pod_line.hpp"
#include "atl/cli/command_line.hpp"
#include "atl/core/byte_size.hpp"
#include "atl/core/duration.hpp"
#include "atl/core/host_port.hpp"
#include "atl/core/resources.hpp"
#include "atl/os/child_process.hpp"
#include "atl/os/job_pointer.hpp"
#include "atl/os/local_door.hpp"
#include "atl/os/logging.hpp"
#include "atl/os/machine.hpp"
#include "atl/os/start_gate.hpp"
#include "atl/os/termination_signals.hpp"
#include "atl/os/tls_cache.hpp"
#include "atl/os/tls_credentials.hpp"

namespace po = boost::program_options;

namespace {

struct WorkerOptions {
  atl::HostPort head;
  std::string name;
  std::string advertise;
  std::string node;
  atl::NodeResources resources;
  atl::Resources custom;  // --resources
  atl::Millis connect_timeout = std::chrono::seconds(60);
  std::optional<atl::os::TlsFiles> tls;  // its paths; the files are checked by tls_loaded
  // The files' loading, on a thread of its own while the actor system starts.
  std::shared_future<atl::Expected<atl::os::TlsFiles>> tls_loaded;
  // A local pod started with its head waits here until the head listens
  // (start_gate.hpp); its TLS files are loaded only if it goes over TCP.
  std::optional<int> start_gate;
  // Past the gate: the same socket, its first connection to the head
  // (pod_line.hpp); -1 once used (or without a gate).
  int head_line = -1;
  int simulate = 0;        // --simulate K: K pods in this process (scale tests)
  std::string pod_prefix;  // with it: --name's "<prefix><first_index>"
  int first_index = 0;
  bool fake_ranks = false;  // --fake-ranks
};

WorkerOptions parse_options(int argc, char** argv) {
  po::options_description desc(
      "Usage: workernode --head HOST:PORT --name POD [options]\n\n"
      "Joins the job whose head listens at HOST:PORT and runs its ranks on this\n"
      "machine. Exits 0 when the job succeeded, 1 when it failed, 2 when the head\n"
      "refused this pod or on bad usage, 3 when the head is unreachable or lost (after\n"
      "trying to rejoin it for --connect-timeout) or declared this pod lost, 4 when\n"
      "the pod was deleted (atlctl delete).\n\nOptions");
  desc.add_options()("help,h", "show this help")("version", "print the version")(
      "head", po::value<std::string>(), "address of the head (HOST:PORT)")(
      "name", po::value<std::string>(), "this pod's name, e.g. <job-id>-worker-0")(
      "node", po::value<std::string>(),
      "the machine this pod runs on, as taints name it (default $NODE_NAME, else the host name)")(
      "cpus", po::value<int>(), "CPUs to offer (default: what the machine has)")(
      "gpus", po::value<int>(), "GPUs to offer (default: /dev/nvidiaN count)")(
      "memory", po::value<std::string>(), "memory to offer, e.g. 64Gi (default: the limit)")(
      "shm", po::value<std::string>(), "shared memory, e.g. 16Gi (default: size of /dev/shm)")(
      "resources", po::value<std::string>(),
      "custom resources for placement groups, as JSON: '{\"disk_ssd\": 1}'")(
      "advertise", po::value<std::string>(),
      "address others reach this pod at (default: the one used towards the head)")(
      "connect-timeout", po::value<std::string>(),
      "how long to keep trying to reach the head (default 60s)")(
      "tls-dir", po::value<std::string>(),
      "the job's TLS credentials: ca.pem, cert.pem, key.pem (default: $ATL_TLS_DIR)")(
      "insecure", "no TLS (only for a head started with --insecure; prints a warning)")(
      "simulate", po::value<int>(),
      "scale tests: host K pods in this process, each its own node agent (sharing this "
      "process's connection to the head), named from --name on (jo-x-worker-0 -> "
      "jo-x-worker-0..K-1), on nodes <node>-<i>")(
      "fake-ranks",
      "ranks are in-process stand-ins, not processes: same messages to the head "
      "(see fake_executor.hpp for what they do)");
  po::variables_map vm =
      atl::cli::parse_or_exit("workernode", po::command_line_parser(argc, argv), desc);
  if (!vm.count("head")) atl::cli::usage_error("workernode", "--head HOST:PORT is required");
  if (!vm.count("name")) atl::cli::usage_error("workernode", "--name POD is required");
  WorkerOptions opt;
  opt.head = atl::cli::value_or_exit("workernode",
                                     atl::parse_host_port(vm["head"].as<std::string>()), "--head");
  opt.name = vm["name"].as<std::string>();
  if (opt.name.empty()) atl::cli::usage_error("workernode", "--name: must not be empty");
  if (vm.count("node")) {
    opt.node = vm["node"].as<std::string>();
    if (opt.node.empty() || opt.node == "all" || opt.node.find(',') != std::string::npos)
      atl::cli::usage_error("workernode", "--node: must be a name (not empty, no ',', not 'all')");
  } else if (const char* env = std::getenv("NODE_NAME"); env && *env) {
    opt.node = env;  // the Kubernetes downward API's spec.nodeName
  } else {
    opt.node = atl::os::host_name();
  }
  opt.resources = atl::os::detect_resources();
  if (vm.count("cpus")) {
    opt.resources.cpus = vm["cpus"].as<int>();
    if (opt.resources.cpus < 0) atl::cli::usage_error("workernode", "--cpus: must not be negative");
  }
  if (vm.count("gpus")) {
    opt.resources.gpus = vm["gpus"].as<int>();
    if (opt.resources.gpus < 0) atl::cli::usage_error("workernode", "--gpus: must not be negative");
  }
  if (vm.count("memory"))
    opt.resources.memory = atl::cli::value_or_exit(
        "workernode", atl::parse_byte_size(vm["memory"].as<std::string>()), "--memory");
  if (vm.count("shm"))
    opt.resources.shm = atl::cli::value_or_exit(
        "workernode", atl::parse_byte_size(vm["shm"].as<std::string>()), "--shm");
  if (vm.count("resources")) {
    opt.custom = atl::cli::value_or_exit(
        "workernode", atl::parse_resources(vm["resources"].as<std::string>()), "--resources");
    for (const char* standard : {atl::kCpu, atl::kGpu, atl::kMemory, atl::kShm})
      if (opt.custom.count(standard))
        atl::cli::usage_error("workernode", std::string("--resources: ") + standard +
                                                " is set by --" +
                                                (std::string(standard) == atl::kCpu   ? "cpus"
                                                 : std::string(standard) == atl::kGpu ? "gpus"
                                                                                      : standard));
  }
  if (vm.count("advertise")) opt.advertise = vm["advertise"].as<std::string>();
  if (vm.count("connect-timeout"))
    opt.connect_timeout = atl::cli::value_or_exit(
        "workernode", atl::parse_duration(vm["connect-timeout"].as<std::string>()),
        "--connect-timeout");
  opt.fake_ranks = vm.count("fake-ranks") > 0;
  if (vm.count("simulate")) {
    opt.simulate = vm["simulate"].as<int>();
    if (opt.simulate < 1 || opt.simulate > 4096)
      atl::cli::usage_error("workernode", "--simulate: must be between 1 and 4096");
    auto digits = opt.name.find_last_not_of("0123456789");
    if (digits == std::string::npos || digits + 1 == opt.name.size() ||
        opt.name.size() - digits - 1 > 6)
      atl::cli::usage_error("workernode",
                            "--simulate: --name must end in the first pod's index (jo-x-worker-0)");
    opt.pod_prefix = opt.name.substr(0, digits + 1);
    opt.first_index = std::stoi(opt.name.substr(digits + 1));
  }
  bool insecure = vm.count("insecure") > 0;
  auto tls_dir = atl::cli::value_or_exit(
      "workernode",
      atl::os::choose_tls_dir(vm.count("tls-dir") ? vm["tls-dir"].as<std::string>() : "", insecure),
      "--tls-dir");
  if (tls_dir) opt.tls = atl::os::tls_files_in(*tls_dir);
  if (insecure)
    std::cerr << "workernode: warning: --insecure: TLS is off; this pod's control connection "
                 "is unauthenticated\n";
  return opt;
}

// "<job-id>-worker-<i>" -> "<job-id>" (the platform's pod names); else "".
std::string job_id_of_pod(const std::string& pod) {
  auto at = pod.rfind("-worker-");
  return at == std::string::npos ? std::string() : pod.substr(0, at);
}

// Whether this process's credentials loaded (the check of its --tls-dir);
// false, with the line the flag's other errors have, when they did not. A
// local pod with a line to its head loads them only once it goes over TCP
// (tls_for_tcp): until then, nothing to wait for.
bool tls_loaded(const WorkerOptions& opt) {
  if (!opt.tls || !opt.tls_loaded.valid()) return true;
  const auto& loaded = opt.tls_loaded.get();
  if (loaded) return true;
  std::cerr << "workernode: --tls-dir: " << loaded.error() << "\n";
  return false;
}

// The credentials before a connect over TCP: loaded now if they were not
// (a local pod that had its line); false, with tls_loaded's line, when they
// cannot be.
bool tls_for_tcp(WorkerOptions& opt) {
  if (opt.tls && !opt.tls_loaded.valid())
    opt.tls_loaded = atl::os::load_tls_credentials_async(opt.tls->dir).share();
  return tls_loaded(opt);
}

// Behind a start gate (a local pod started beside its head): waits until the
// head listens. The gate is its line to the head then (pod_line.hpp), no TLS
// on it: the job's TLS files (a new job's head has just made them) are
// loaded once the pod goes over TCP (tls_for_tcp), unless its head checked
// them before forking it (mounted or kept credentials). False when the head never listened: it
// ended (and said why: nothing more is said here) or --connect-timeout passed.
bool through_start_gate(WorkerOptions& opt) {
  if (!opt.start_gate) return true;
  auto outcome = atl::os::wait_at_start_gate(*opt.start_gate, opt.connect_timeout);
  if (outcome == atl::os::GateOutcome::open) opt.head_line = *opt.start_gate;
  opt.start_gate.reset();
  if (outcome == atl::os::GateOutcome::timed_out)
    std::cerr << "workernode: the head at " << opt.head.to_string()
              << " did not start listening within " << atl::format_duration(opt.connect_timeout)
              << "\n";
  if (outcome != atl::os::GateOutcome::open) return false;
  if (opt.tls && atl::os::tls_loaded_before(*opt.tls)) {
    // Forked by its head after it checked them (local_pods.hpp): parsed already.
    std::promise<atl::Expected<atl::os::TlsFiles>> loaded;
    loaded.set_value(*opt.tls);
    opt.tls_loaded = loaded.get_future().share();
  }
  return true;
}

// The head's supervisor, retried with backoff (0.2 s doubling to 2 s) until
// --connect-timeout: pods may start before the head, and a restarted head
// comes back on the same address. Nothing (and one line) when it never does;
// every 10 s a line says whom it waits for and why it could not yet.
// `signalled`: a SIGTERM/SIGINT came; connecting stops at the next try.
std::optional<caf::actor> connect_with_backoff(caf::actor_system& sys, const WorkerOptions& opt,
                                               const std::atomic<bool>& signalled) {
  const auto began = std::chrono::steady_clock::now();
  auto deadline = began + opt.connect_timeout;
  auto pause = std::chrono::milliseconds(200);
  auto next_word = began + std::chrono::seconds(10);
  while (true) {
    if (signalled.load()) return std::nullopt;
    // A head that takes the connection and answers late is waited for, but
    // not past --connect-timeout.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto found =
        atl::connect_actor(sys, opt.head.host, opt.head.port,
                           std::clamp(left, std::chrono::milliseconds(0), atl::kConnectPatience));
    if (found) return *found;
    if (signalled.load()) return std::nullopt;
    std::string error =
        atl::describe_connect_error(sys, found.error(), opt.head.host, opt.head.port);
    if (std::chrono::steady_clock::now() >= deadline) {
      std::cerr << "workernode: cannot reach the head at " << opt.head.to_string() << " within "
                << atl::format_duration(opt.connect_timeout) << ": " << error << "\n";
      return std::nullopt;
    }
    if (const auto now = std::chrono::steady_clock::now(); now >= next_word) {
      const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - began);
      std::cerr << "workernode: waiting for the head at " << opt.head.to_string() << " ("
                << waited.count() << " s so far, at most "
                << atl::format_duration(opt.connect_timeout) << "): " << error << std::endl;
      next_word = now + std::chrono::seconds(10);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::seconds(2));
  }
}

// The head's supervisor: over the pod's line first, if it has one (a local
// pod, forked by its head: pod_line.hpp), else (or if the line fails) over
// TCP. `shutter`: the line's, to end it by (-1: none).
std::optional<caf::actor> connect_first(caf::actor_system& sys, WorkerOptions& opt,
                                        const std::atomic<bool>& signalled, int& shutter) {
  if (opt.head_line >= 0) {
    auto line = atl::connect_pod_line(sys, opt.head_line, opt.head.port, atl::kConnectPatience);
    opt.head_line = -1;  // CAF's now
    if (line.supervisor) {
      shutter = line.shutter;
      return *line.supervisor;
    }
    atl::component_logger("workernode")
        ->info("the line to the head failed ({}): connecting over TCP",
               atl::error_words(line.supervisor.error(), sys));
  }
  if (!tls_for_tcp(opt)) return std::nullopt;
  return connect_with_backoff(sys, opt, signalled);
}

// The head went silent (a cut link, a frozen head): its old connection is
// shut, and CAF's proxy of the supervisor awaited going down, before a
// rejoin. Else CAF 0.17 answers the rejoin's connect from its cache and
// routes it over the dead connection (the same node id), where it waited
// for TCP's retransmission backoff: after an 8 s cut the pod heard its
// "joined" 6 s late and the head, hearing no heartbeat, declared it lost again.
// A local pod's line (`shutter`) is ended the same way; the rejoin goes over TCP.
void forget_head_connection(caf::actor_system& sys, const WorkerOptions& opt,
                            const caf::actor& supervisor, int& shutter) {
  const bool had_line = shutter >= 0;
  atl::end_pod_line(shutter);
  if (atl::os::shutdown_connections_to(opt.head.host, opt.head.port) == 0 && !had_line) return;
  caf::scoped_actor self{sys};
  self->monitor(supervisor);
  self->receive([](const caf::down_msg&) {}, caf::after(std::chrono::seconds(2)) >> [] {});
}

// The relay door for atlctl in this pod (local_door.hpp), or nothing.
std::unique_ptr<atl::LocalDoor> open_relay_door(caf::actor_system& sys, const WorkerOptions& opt,
                                                const caf::actor& supervisor) {
  auto ca_pem = atl::os::door_ca(opt.tls ? opt.tls->ca : "");
  if (!ca_pem) return nullptr;  // its hellos could not be checked: atlctl goes over TCP
  auto listener = atl::os::listen_relay_door(opt.head.host, opt.head.port);
  if (!listener) return nullptr;  // another workernode here relays, or no such address
  auto door = atl::LocalDoor::serve(sys, supervisor, *listener, std::move(*ca_pem));
  if (!door) return nullptr;
  return std::move(*door);
}

// The address others reach this pod at (--advertise, else the one used
// towards the head) and its interface; false, with one line, when there is none.
bool set_address(const WorkerOptions& opt, atl::NodeAgentConfig& node) {
  auto local = atl::os::local_address_towards(opt.head.host, opt.head.port);
  if (!local) {
    std::cerr << "workernode: " << local.error() << "\n";
    return false;
  }
  node.info.address = opt.advertise.empty() ? *local : opt.advertise;
  node.info.interface = atl::os::interface_of_address(*local);
  // A Kubernetes pod's hostname is its name; behind a headless service the
  // name resolves to it, and ranks get it as MASTER_ADDR (seed 002).
  node.info.dns_name =
      atl::os::own_dns_name(node.info.pod, node.info.address, std::chrono::seconds(1));
  return true;
}

// Who is told of a SIGINT/SIGTERM: every node agent of this process (one, or
// --simulate's K).
struct SignalHub {
  std::atomic<bool> signalled{false};
  std::mutex mutex;
  std::vector<caf::actor> agents;

  void signal() {
    signalled.store(true);
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& a : agents) caf::anon_send(a, atl::cancel_atom::value);
    if (agents.empty()) {
      // Connecting or rejoining: no rank runs. A connect to a host that does
      // not answer blocks in the kernel (SYN retries, minutes): if the next
      // try does not see the flag within 5 s, the process ends here.
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::seconds(5));
        std::cerr << "workernode: SIGTERM while connecting to the head: exiting\n";
        std::_Exit(atl::kNodeExitSignalled);
      }).detach();
    }
  }
  void add(const caf::actor& agent) {
    std::lock_guard<std::mutex> lock(mutex);
    agents.push_back(agent);
    if (signalled.load()) caf::anon_send(agent, atl::cancel_atom::value);
  }
  void remove(const caf::actor& agent) {
    std::lock_guard<std::mutex> lock(mutex);
    agents.erase(std::remove(agents.begin(), agents.end(), agent), agents.end());
  }
};

// One pod's life in an actor system of its own (its own connection to the
// head): join, rejoin a head that went away (a restarted head comes back on
// the same address) with backoff for up to --connect-timeout, until the job
// ends. The exit code the pod ends with.
int run_pod(WorkerOptions& opt, atl::NodeAgentConfig node, SignalHub& hub) {
  auto log = atl::component_logger("workernode");
  auto exit_code = std::make_shared<std::atomic<int>>(atl::kNodeExitHeadLost);
  // Declared before the actor system, so it outlives it: its teardown is bounded.
  std::unique_ptr<atl::os::ShutdownWatchdog> watchdog;
  atl::AtlSystemConfig cfg{opt.tls};
  caf::actor_system sys{cfg};
  if (!through_start_gate(opt)) return atl::kNodeExitHeadLost;
  if (!tls_loaded(opt)) return atl::cli::kExitUsage;
  // Rejoins are bounded too: since the first failed one, for --connect-timeout,
  // with the same backoff (a head that refuses for now is asked again later).
  atl::os::PublishedJobPointer pointer_here;  // withdrawn as this pod ends
  std::optional<std::chrono::steady_clock::time_point> rejoin_deadline;
  auto pause = std::chrono::milliseconds(200);
  // What the ranks wrote and the head never acknowledged before this pod lost
  // it: kept across rejoins, sent once the head takes the pod again.
  node.unsent = std::make_shared<atl::UnsentOutput>();
  int line_shutter = -1;  // a local pod's line to its head (pod_line.hpp), while it has one
  while (true) {
    if (rejoin_deadline) {
      if (std::chrono::steady_clock::now() >= *rejoin_deadline) {
        std::cerr << "workernode: " << node.info.pod << ": could not rejoin the head at "
                  << opt.head.to_string() << " within " << atl::format_duration(opt.connect_timeout)
                  << "\n";
        return atl::kNodeExitHeadLost;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::seconds(2));
    }
    auto supervisor = connect_first(sys, opt, hub.signalled, line_shutter);
    if (!supervisor) return hub.signalled.load() ? atl::kNodeExitSignalled : atl::kNodeExitHeadLost;
    if (!pointer_here.published()) {
      // atlctl from any shell of this pod finds the job here (job_pointer.hpp).
      atl::os::JobPointer pointer{job_id_of_pod(node.info.pod),
                                  node.info.pod,
                                  opt.head.to_string(),
                                  opt.tls ? atl::os::absolute_dir(opt.tls->dir) : "",
                                  !opt.tls,
                                  0,
                                  0,
                                  {}};
      auto published = atl::os::publish_job_pointer(pointer);
      if (published) {
        pointer_here = atl::os::PublishedJobPointer(*published, pointer.job_id, pointer.pod);
      } else {
        log->warn("{} (atlctl needs --address in this pod)", published.error());
      }
    }
    if (!set_address(opt, node)) return atl::kNodeExitHeadLost;
    // The web terminal's shell is this job's (atlctl there needs no flags,
    // whatever other jobs share the host).
    node.shell_env = {"ATL_JOB_ID=" + job_id_of_pod(node.info.pod),
                      "ATL_ADDRESS=" + opt.head.to_string()};
    node.shell_env.push_back(opt.tls ? "ATL_TLS_DIR=" + atl::os::absolute_dir(opt.tls->dir)
                                     : std::string("ATL_INSECURE=1"));
    node.head_lost = std::make_shared<std::atomic<bool>>(false);
    node.joined = std::make_shared<std::atomic<bool>>(false);
    auto agent = atl::spawn_node_agent(sys, *supervisor, node, exit_code);
    hub.add(agent);
    // atlctl in this pod reaches the head through this connection (the
    // relay door); without one (another workernode of this namespace holds
    // it), over TCP.
    auto door = open_relay_door(sys, opt, *supervisor);
    {
      caf::scoped_actor self{sys};
      self->wait_for(agent);
    }
    door.reset();
    hub.remove(agent);
    if (hub.signalled.load() || !node.head_lost->load()) break;
    forget_head_connection(sys, opt, *supervisor, line_shutter);
    if (node.joined->load() || !rejoin_deadline) {
      // It was in the job (or this is the first try): a fresh window.
      rejoin_deadline = std::chrono::steady_clock::now() + opt.connect_timeout;
      pause = std::chrono::milliseconds(200);
    }
    log->warn(
        "{}: the head at {} is gone or refused this pod for now: trying to rejoin for up "
        "to {}",
        node.info.pod, opt.head.to_string(), atl::format_duration(opt.connect_timeout));
  }
  if (!hub.signalled.load()) {
    // The head ended this pod (the job's end, a delete, a fence): its ranks
    // are gone, and what it owed the head has arrived (their output, each
    // chunk acknowledged by the head's sink; their exits, before the head
    // could end the job). What is left unsent is the agent's end, which the
    // head hears as well from the connection's close. So the actor system's
    // teardown (~2 ms of CPU, at every job's end) is skipped.
    pointer_here.withdraw();
    std::fflush(nullptr);
    _exit(exit_code->load());
  }
  watchdog =
      std::make_unique<atl::os::ShutdownWatchdog>(std::chrono::seconds(30), exit_code->load());
  return exit_code->load();
}

// --simulate K: pods <prefix><first>..<prefix><first+K-1>, each its own node
// agent, all in one actor system: CAF 0.17 gives every actor system of a
// process the same node id, so K systems in one process would look like one
// node reconnecting K times. The K agents share this process's connection to
// the head (run several processes for several connections). No rejoin: when
// the head goes, the simulated pods end. Exits with the first pod's code.
int run_simulated(WorkerOptions& opt, atl::NodeAgentConfig node, SignalHub& hub) {
  auto log = atl::component_logger("workernode");
  std::unique_ptr<atl::os::ShutdownWatchdog> watchdog;  // outlives the actor system
  atl::AtlSystemConfig cfg{opt.tls};
  caf::actor_system sys{cfg};
  if (!through_start_gate(opt)) return atl::kNodeExitHeadLost;
  if (!tls_loaded(opt)) return atl::cli::kExitUsage;
  int line_shutter = -1;  // kept open (the connection's) for this process's life
  auto supervisor = connect_first(sys, opt, hub.signalled, line_shutter);
  if (!supervisor) return atl::kNodeExitHeadLost;
  if (!set_address(opt, node)) return atl::kNodeExitHeadLost;
  node.forward_log = false;  // the process's log is not one pod's
  node.watch_gpus = false;
  std::vector<std::shared_ptr<std::atomic<int>>> codes;
  std::vector<caf::actor> agents;
  for (int i = 0; i < opt.simulate; ++i) {
    atl::NodeAgentConfig mine = node;
    mine.info.pod = opt.pod_prefix + std::to_string(opt.first_index + i);
    mine.info.machine = opt.node + "-" + std::to_string(opt.first_index + i);
    mine.head_lost = std::make_shared<std::atomic<bool>>(false);
    mine.joined = std::make_shared<std::atomic<bool>>(false);
    codes.push_back(std::make_shared<std::atomic<int>>(atl::kNodeExitHeadLost));
    agents.push_back(atl::spawn_node_agent(sys, *supervisor, mine, codes.back()));
    hub.add(agents.back());
  }
  log->info("simulating {} pods ({}{}..{}) with {} ranks", opt.simulate, opt.pod_prefix,
            opt.first_index, opt.first_index + opt.simulate - 1,
            opt.fake_ranks ? "in-process stand-in" : "real process");
  {
    caf::scoped_actor self{sys};
    for (const auto& a : agents) self->wait_for(a);
  }
  for (const auto& a : agents) hub.remove(a);
  watchdog =
      std::make_unique<atl::os::ShutdownWatchdog>(std::chrono::seconds(30), codes.front()->load());
  return codes.front()->load();
}

}  // namespace

namespace atl::workernode {

int main(int argc, char** argv) {
  atl::os::keep_own_files_private();
  atl::os::use_few_malloc_arenas();
  WorkerOptions opt = parse_options(argc, argv);
  atl::os::export_tls_choice(opt.tls);  // ranks run atlctl with it
  atl::os::TerminationSignals::block_in_this_thread();
  opt.start_gate = atl::os::take_start_gate();
  if (opt.tls && !opt.start_gate)
    opt.tls_loaded = atl::os::load_tls_credentials_async(opt.tls->dir).share();
  SignalHub hub;
  atl::os::TerminationSignals signals([&](int) { hub.signal(); });
  atl::NodeAgentConfig node;
  node.head_host = opt.head.host;
  node.head_port = opt.head.port;
  node.info.pod = opt.name;
  node.info.machine = opt.node;
  node.info.cpus = opt.resources.cpus;
  node.info.gpus = opt.resources.gpus;
  node.info.memory = opt.resources.memory;
  node.info.shm = opt.resources.shm;
  node.info.resources = opt.custom;
  node.fake_ranks = opt.fake_ranks;
  if (opt.simulate == 0) return run_pod(opt, node, hub);
  return run_simulated(opt, node, hub);
}

}  // namespace atl::workernode
