// headnode: the head pod's process. Publishes the JobSupervisor, optionally
// starts local workers, and exits with the job's outcome (0 ok, 1 failed, 2 usage).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <sstream>
#include <thread>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/exit_words.hpp"
#include "atl/actors/job_supervisor.hpp"
#include "atl/actors/local_door.hpp"
#include "atl/actors/log_sink.hpp"
#include "atl/actors/messages.hpp"
#include "atl/actors/pod_line.hpp"
#include "atl/cli/command_line.hpp"
#include "atl/core/async_or_now.hpp"
#include "atl/core/dashboard_auth.hpp"
#include "atl/core/duration.hpp"
#include "atl/core/ray_cluster.hpp"
#include "atl/core/shell.hpp"
#include "atl/os/child_process.hpp"
#include "atl/os/job_pointer.hpp"
#include "atl/os/job_store.hpp"
#include "atl/os/local_door.hpp"
#include "atl/os/logging.hpp"
#include "atl/os/machine.hpp"
#include "atl/os/open_connections.hpp"
#include "atl/os/process_title.hpp"
#include "atl/os/ray_install.hpp"
#include "atl/os/reach_probe.hpp"
#include "atl/os/secrets.hpp"
#include "atl/os/termination_signals.hpp"
#include "atl/os/tls_credentials.hpp"
#include "dashboard_server.hpp"
#include "head_queries.hpp"
#include "local_pods.hpp"
#include "metrics_server.hpp"
#include "tensorboard.hpp"

namespace po = boost::program_options;

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitFailed = 1;

struct HeadOptions {
  atl::JobSpec job;
  std::string bind = "127.0.0.1";
  std::string advertise;
  std::uint16_t port = 6380;
  std::string state_dir;
  int local_workers = 0;
  atl::Millis pod_restart_delay = std::chrono::seconds(1);
  std::string isolate_local_pods = "auto";  // --isolate-local-pods auto|yes|no
  atl::Millis linger{0};
  std::size_t history = 10000;  // --history
  std::string tls_dir;          // --tls-dir: mounted credentials; empty: made in <state-dir>/tls
  bool insecure = false;
  int metrics_port = -1;      // --metrics-port: -1 off, 0 any free port
  int dashboard_port = 8265;  // -1 off, 0 any free port (ray mode: 8266, Ray's own has 8265)
  bool dashboard_port_given = false;
  std::string dashboard_bind;        // default: --bind
  std::string dashboard_token_file;  // default: <state-dir>/dashboard-token, made once
  bool print_login_link = false;     // --print-login-link (or stdout a terminal)
  atl::supervisor::TerminalSettings web_terminal;  // --web-terminal on|off, --web-terminal-limit
  std::string metrics_bind = "127.0.0.1";
  std::string ray_bin = "ray";                  // ray mode: `ray` of the image
  std::string tensorboard_bin = "tensorboard";  // --tensorboard-logdir: the image's
  std::string ray_python = "python3";           // the Python beside it (has the ray module)
};

// Ray mode, every pod on this host: Ray's GCS on a free port unless the job
// names one (checked in parse_options), and the ports Ray fixes per node on
// free ones too.
void settle_local_ray_ports(atl::JobSpec& job) {
  const std::string host = atl::ray_node_host("127.0.0.1");
  auto free_port = [&](const char* what) {
    auto free = atl::os::ProbeListener::open(host);
    if (!free)
      atl::cli::usage_error("headnode", std::string("ray mode: no free port for ") + what + " on " +
                                            host + ": " + free.error());
    return static_cast<int>(free->port());
  };
  if (!job.ray_port_given) job.ray_port = free_port("Ray's GCS");
  // Ray's dashboard is atl's /ray/ relay's: any free port unless named (two
  // jobs starting at once both found 8265 free, and the second's Ray failed).
  if (job.ray_dashboard_port == atl::JobSpec{}.ray_dashboard_port) job.ray_dashboard_port = 0;
  job.ray_client_port = free_port("Ray's client server");
  job.ray_agent_port = free_port("Ray's dashboard agent");
  job.ray_any_worker_ports = true;
}

HeadOptions parse_options(int argc, char** argv) {
  // Everything after a bare "--" is the entrypoint, verbatim.
  std::vector<std::string> trailing;
  int own_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      own_argc = i;
      trailing.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  po::options_description desc(
      "Usage: headnode [options] [-- ENTRYPOINT...]\n\n"
      "Runs the head of one atl job: waits for the workers, checks them, runs the\n"
      "entrypoint and exits 0 when the job succeeded, 1 when it failed, 2 on bad\n"
      "usage or a bad job spec. Flags override the fields of --job.\n\n"
      "Examples:\n"
      "  headnode --workers 2 --nproc-per-node 8 -- python train.py    # torchrun-style, 16 ranks\n"
      "  headnode --workers 2 --local-workers 2 -- python train.py     # both pods on this "
      "machine\n"
      "  headnode --mode ray --workers 3 -- python driver.py           # a Ray cluster, its "
      "driver\n"
      "  headnode --job job.json                                       # the spec in a file\n\n"
      "Options");
  po::options_description g_general("General");
  g_general.add_options()("help,h", "show this help")("version", "print the version")(
      "job", po::value<std::string>(), "JSON job spec file")(
      "job-id", po::value<std::string>(), "job id (default jo- + 16 random characters)")(
      "mode", po::value<std::string>(),
      "spmd (default: once per rank), driver (once on the head) or ray (a Ray cluster "
      "over the pods, the entrypoint its driver)")("entrypoint", po::value<std::string>(),
                                                   "command to run (or give it after --)")(
      "env", po::value<std::vector<std::string>>()->composing(), "K=V for every rank (repeatable)")(
      "working-dir", po::value<std::string>(), "working directory of the ranks")(
      "state-dir", po::value<std::string>(),
      "where logs and the address go (default ./atl-state/<job-id>)")(
      "linger", po::value<std::string>(),
      "keep answering atlctl this long after the job ended (default 0s)")(
      "history", po::value<std::string>(),
      "finished tasks and finished debug runs kept for status and the API, each (default "
      "10000; older ones are dropped, oldest first)");
  desc.add(g_general);
  po::options_description g_pods_and_ranks("Pods and ranks");
  g_pods_and_ranks.add_options()("workers", po::value<int>(), "number of worker pods (default 1)")(
      "spare-workers", po::value<int>(),
      "extra worker pods that idle and replace a lost or tainted one (default 0)")(
      "nproc-per-node", po::value<int>(), "ranks per worker (default 1)")(
      "placement", po::value<std::string>(),
      "spmd: each rank a bundle placed by PACK, SPREAD, STRICT_PACK or STRICT_SPREAD (needs "
      "--bundle; default: nproc-per-node ranks on each pod in order)")(
      "bundle", po::value<std::string>(),
      "spmd: what one rank takes, as JSON: '{\"CPU\": 1, \"GPU\": 1}' (strategy PACK unless "
      "--placement)")(
      "local-workers", po::value<int>(),
      "also start N workernode processes on this machine (recreated when they exit)")(
      "isolate-local-pods", po::value<std::string>(),
      "auto|yes|no: each local worker, and the head's own processes (driver, Ray's head), in a "
      "PID namespace of its own, as a container (ps, pkill there see that pod only); auto: "
      "where this host allows it (root) (default auto)")(
      "pod-restart-delay", po::value<std::string>(),
      "how long a local worker that exited waits before it is started again (default 1s)")(
      "master-port", po::value<int>(),
      "MASTER_PORT of the ranks (default 29500; a job whose pods are all local: a free port)")(
      "ready-timeout", po::value<std::string>(), "how long to wait for the workers (default 300s)")(
      "grace", po::value<std::string>(),
      "SIGTERM to SIGKILL delay when stopping ranks (default 10s)");
  desc.add(g_pods_and_ranks);
  po::options_description g_faults("Faults: restarts, liveness, hangs");
  g_faults.add_options()(
      "max-restarts", po::value<int>(),
      "restarts a fault may cost before the job fails (default 10; 0 = never restart)")(
      "restart-on-failure", "a rank exiting non-zero restarts the job too (uses the budget)")(
      "heartbeat-interval", po::value<std::string>(),
      "how often head and workers send each other a heartbeat (default 500ms)")(
      "heartbeat-timeout", po::value<std::string>(),
      "silence after which a worker (or the head, for a worker) is lost (default 3s)")(
      "hang-timeout", po::value<std::string>(),
      "spmd: the longest a step, evaluation or checkpoint may go without any rank's output or "
      "progress signal: the job is then suspect and its stacks are looked at, a rank working "
      "alone is judged busy (default 5m; 0 = off)")(
      "hang-factor", po::value<std::string>(),
      "spmd: once the job made steps, ranks all idle for K x its p99 step time (at least 10s, "
      "at most --hang-timeout) make it suspect (default 4; 0 = --hang-timeout alone)")(
      "on-hang", po::value<std::string>(),
      "a hung job: restart (taint the culprits' nodes, restart on spares; default) or report")(
      "stop-signal", po::value<std::string>(),
      "SIG@TIME (Slurm's --signal, e.g. USR1@30s): before atl stops user code (a restart, "
      "atlctl stop, the job cancelled) each rank's own process gets SIG, and TIME later the "
      "SIGTERM and the grace as always, so it may checkpoint first")(
      "on-straggler", po::value<std::string>(),
      "a rank persistently computing far more than its waiting peers: report (an event and a "
      "mark; default) or taint (its node tainted at the next restart)");
  desc.add(g_faults);
  po::options_description g_ray_mode("Ray mode");
  g_ray_mode.add_options()("ray-port", po::value<int>(),
                           "ray mode: port of Ray's head (GCS) (default 6379)")(
      "ray-dashboard-port", po::value<int>(),
      "ray mode: port of Ray's dashboard on the head pod's loopback (default 8265, or any free "
      "one when that is taken; 0: any free one); atl's dashboard serves it at /ray/")(
      "ray-bin", po::value<std::string>(),
      "ray mode: the image's `ray` command (default: ray on PATH)")(
      "ray-ready-timeout", po::value<std::string>(),
      "ray: how long to wait for every node to be alive in Ray before the attempt counts as a "
      "ready timeout (default 2m; a line every 10 s names the nodes still missing)");
  desc.add(g_ray_mode);
  po::options_description g_dashboard("Dashboard, metrics, TensorBoard");
  g_dashboard.add_options()(
      "dashboard-port", po::value<std::string>(),
      "the dashboard's port (default 8265 as Ray's; 8266 in ray mode, where Ray's dashboard "
      "has 8265; a default that is taken falls back to any free port), 0 any free port, off "
      "none; printed as 'dashboard https://HOST:PORT'")(
      "dashboard-bind", po::value<std::string>(),
      "address the dashboard listens on (default: --bind)")(
      "dashboard-token-file", po::value<std::string>(),
      "the dashboard's login token, e.g. a mounted Secret (default: <state-dir>/dashboard-token, "
      "made 0600 on the first start)")(
      "print-login-link",
      "print the dashboard's link that logs in ('login https://HOST:PORT/login?token=...'; "
      "it holds the token), as the head does when its stdout is a terminal")(
      "web-terminal", po::value<std::string>(),
      "on (default) or off: the dashboard's terminal into the pods (a shell, as powerful as "
      "atlctl, to whoever has the dashboard's token; each opened and closed is in the events)")(
      "web-terminal-limit", po::value<std::string>(),
      "web terminals open at most at once into one pod (default 4)")(
      "metrics-port", po::value<int>(),
      "serve Prometheus metrics at http://BIND:PORT/metrics (0: any free port; printed as "
      "'metrics http://...'); off by default")(
      "metrics-bind", po::value<std::string>(),
      "address the metrics port listens on (default 127.0.0.1: no authentication there)")(
      "tensorboard-logdir", po::value<std::string>(),
      "run TensorBoard on DIR (the job's event files) on the head pod's loopback, served by the "
      "dashboard at /tensorboard/ behind its login (spec 'tensorboard')")(
      "tensorboard-bin", po::value<std::string>(),
      "the tensorboard command of the image (default: tensorboard in PATH)");
  desc.add(g_dashboard);
  po::options_description g_network_and_security("Network and security");
  g_network_and_security.add_options()("bind", po::value<std::string>(),
                                       "address to listen on (default 127.0.0.1)")(
      "advertise", po::value<std::string>(), "host workers and ranks use to reach the head")(
      "port", po::value<int>(), "port to listen on (default 6380; 0 = any free port)")(
      "make-tls", po::value<std::string>(),
      "make a job's credentials (ca.pem, cert.pem, key.pem) in DIR for --job-id and exit: what "
      "a Kubernetes Secret holds (scripts/render-k8s.py)")(
      "tls-dir", po::value<std::string>(),
      "the job's TLS credentials (ca.pem, cert.pem, key.pem), e.g. a mounted Secret "
      "(default: made for this job in <state-dir>/tls)")(
      "insecure", "no TLS: anyone who reaches the port controls the job (prints a warning)");
  desc.add(g_network_and_security);

  po::variables_map vm =
      atl::cli::parse_or_exit("headnode", po::command_line_parser(own_argc, argv), desc);

  if (vm.count("make-tls")) {
    if (!vm.count("job-id")) atl::cli::usage_error("headnode", "--make-tls needs --job-id");
    const std::string id = vm["job-id"].as<std::string>();
    if (auto ok = atl::validate_job_id(id); !ok) atl::cli::usage_error("headnode", ok.error());
    const std::string dir = vm["make-tls"].as<std::string>();
    if (::access(atl::os::tls_files_in(dir).ca.c_str(), F_OK) == 0)
      atl::cli::usage_error("headnode", "--make-tls: " + dir + " already holds credentials");
    auto made = atl::os::generate_tls_credentials(dir, id);
    if (!made) atl::cli::usage_error("headnode", "--make-tls: " + made.error());
    std::cout << "credentials for " << id << " in " << dir << std::endl;
    std::exit(0);
  }
  HeadOptions opt;
  if (vm.count("job")) {
    std::string path = vm["job"].as<std::string>();
    // Bounded, and a regular file: --job /dev/zero, a FIFO or a log given by
    // mistake must not read (or wait) forever.
    constexpr std::size_t kMaxJobFile = 1 << 20;
    auto text = atl::os::read_small_file(path, kMaxJobFile);
    if (!text) atl::cli::usage_error("headnode", "--job: " + text.error());
    auto spec = atl::parse_job_spec_json(*text);
    if (!spec) atl::cli::usage_error("headnode", path + ": " + spec.error());
    opt.job = std::move(spec).value();
  }
  atl::JobSpec& job = opt.job;
  if (vm.count("job-id")) {
    job.job_id = vm["job-id"].as<std::string>();
    // Given empty is a mistake (an unset variable), not a wish for a random id.
    if (job.job_id.empty())
      atl::cli::usage_error("headnode",
                            "--job-id is empty: give an id (lowercase letters, digits and '-') or "
                            "leave the option out for a random one");
  }
  if (vm.count("mode"))
    job.mode = atl::cli::value_or_exit("headnode",
                                       atl::parse_job_mode(vm["mode"].as<std::string>()), "--mode");
  if (vm.count("entrypoint")) job.entrypoint = vm["entrypoint"].as<std::string>();
  if (!trailing.empty()) {
    if (vm.count("entrypoint"))
      atl::cli::usage_error("headnode",
                            "give the entrypoint either with --entrypoint or after --, not both");
    job.entrypoint = atl::command_from_words(trailing);
  }
  if (vm.count("workers")) job.workers = vm["workers"].as<int>();
  if (vm.count("spare-workers")) job.spare_workers = vm["spare-workers"].as<int>();
  if (vm.count("nproc-per-node")) job.nproc_per_node = vm["nproc-per-node"].as<int>();
  if (vm.count("placement") || vm.count("bundle")) {
    if (!vm.count("bundle") && !(job.placement && vm.count("placement")))
      atl::cli::usage_error("headnode", "--placement needs --bundle (what one rank takes)");
    atl::RankPlacementSpec placement = job.placement.value_or(atl::RankPlacementSpec{});
    if (vm.count("placement"))
      placement.strategy = atl::cli::value_or_exit(
          "headnode", atl::parse_placement_strategy(vm["placement"].as<std::string>()),
          "--placement");
    if (vm.count("bundle"))
      placement.bundle = atl::cli::value_or_exit(
          "headnode", atl::parse_bundle(vm["bundle"].as<std::string>()), "--bundle");
    job.placement = placement;
  }
  if (vm.count("env")) {
    for (const auto& kv : vm["env"].as<std::vector<std::string>>()) {
      auto parsed = atl::cli::value_or_exit("headnode", atl::parse_env_assignment(kv), "--env");
      job.env[parsed.first] = parsed.second;
    }
  }
  if (vm.count("working-dir")) job.working_dir = vm["working-dir"].as<std::string>();
  if (vm.count("ready-timeout"))
    job.ready_timeout = atl::cli::value_or_exit(
        "headnode", atl::parse_duration(vm["ready-timeout"].as<std::string>()), "--ready-timeout");
  if (vm.count("grace"))
    job.grace = atl::cli::value_or_exit(
        "headnode", atl::parse_duration(vm["grace"].as<std::string>()), "--grace");
  if (vm.count("hang-timeout"))
    job.hang_timeout = atl::cli::value_or_exit(
        "headnode", atl::parse_duration(vm["hang-timeout"].as<std::string>()), "--hang-timeout");
  if (vm.count("hang-factor"))
    job.hang_factor = atl::cli::value_or_exit(
        "headnode", atl::parse_hang_factor(vm["hang-factor"].as<std::string>()), "--hang-factor");
  if (vm.count("stop-signal"))
    job.stop_warning = atl::cli::value_or_exit(
        "headnode", atl::parse_stop_warning(vm["stop-signal"].as<std::string>()), "--stop-signal");
  if (vm.count("on-straggler"))
    job.on_straggler = atl::cli::value_or_exit(
        "headnode", atl::parse_on_straggler(vm["on-straggler"].as<std::string>()),
        "--on-straggler");
  if (vm.count("on-hang"))
    job.on_hang = atl::cli::value_or_exit(
        "headnode", atl::parse_on_hang(vm["on-hang"].as<std::string>()), "--on-hang");
  if (vm.count("ray-ready-timeout"))
    job.ray_ready_timeout = atl::cli::value_or_exit(
        "headnode", atl::parse_duration(vm["ray-ready-timeout"].as<std::string>()),
        "--ray-ready-timeout");
  if (vm.count("ray-port")) {
    job.ray_port = vm["ray-port"].as<int>();
    job.ray_port_given = true;
    if (job.ray_port < 1 || job.ray_port > 65535)
      atl::cli::usage_error("headnode", "--ray-port: must be between 1 and 65535");
  }
  if (vm.count("ray-dashboard-port")) {
    job.ray_dashboard_port = vm["ray-dashboard-port"].as<int>();
    if (job.ray_dashboard_port < 0 || job.ray_dashboard_port > 65535)
      atl::cli::usage_error("headnode", "--ray-dashboard-port: must be between 0 and 65535");
  }
  if (vm.count("ray-bin")) opt.ray_bin = vm["ray-bin"].as<std::string>();
  if (vm.count("tensorboard-logdir")) {
    job.tensorboard_logdir = vm["tensorboard-logdir"].as<std::string>();
    if (job.tensorboard_logdir.empty())
      atl::cli::usage_error("headnode", "--tensorboard-logdir: give a directory");
  }
  if (vm.count("tensorboard-bin")) {
    if (job.tensorboard_logdir.empty())
      atl::cli::usage_error("headnode",
                            "--tensorboard-bin needs --tensorboard-logdir (or spec 'tensorboard')");
    opt.tensorboard_bin = vm["tensorboard-bin"].as<std::string>();
  }
  if (vm.count("master-port")) {
    job.master_port_given = true;
    job.master_port = vm["master-port"].as<int>();
    if (job.master_port < 1 || job.master_port > 65000)
      atl::cli::usage_error("headnode", "--master-port: must be between 1 and 65000");
  }
  if (vm.count("bind")) opt.bind = vm["bind"].as<std::string>();
  if (vm.count("advertise")) opt.advertise = vm["advertise"].as<std::string>();
  if (vm.count("port")) {
    int port = vm["port"].as<int>();
    if (port < 0 || port > 65535)
      atl::cli::usage_error("headnode", "--port: must be between 0 and 65535");
    opt.port = static_cast<std::uint16_t>(port);
  }
  if (vm.count("local-workers")) {
    opt.local_workers = vm["local-workers"].as<int>();
    if (opt.local_workers < 0 || opt.local_workers > atl::total_worker_pods(job))
      atl::cli::usage_error("headnode",
                            "--local-workers: must be between 0 and the number of workers and "
                            "spares (" +
                                std::to_string(atl::total_worker_pods(job)) + ")");
  }
  if (vm.count("isolate-local-pods")) {
    opt.isolate_local_pods = vm["isolate-local-pods"].as<std::string>();
    if (opt.isolate_local_pods != "auto" && opt.isolate_local_pods != "yes" &&
        opt.isolate_local_pods != "no")
      atl::cli::usage_error("headnode", "--isolate-local-pods: '" + opt.isolate_local_pods +
                                            "' is not one of auto, yes, no");
    if (opt.isolate_local_pods == "yes") {
      if (auto can = atl::os::pid_namespaces_available(); !can)
        atl::cli::usage_error("headnode", "--isolate-local-pods yes: " + can.error() +
                                              "; run as root, or pass --isolate-local-pods no");
    }
  }
  if (vm.count("pod-restart-delay"))
    opt.pod_restart_delay = atl::cli::value_or_exit(
        "headnode", atl::parse_duration(vm["pod-restart-delay"].as<std::string>()),
        "--pod-restart-delay");
  if (vm.count("max-restarts")) job.max_restarts = vm["max-restarts"].as<int>();
  if (vm.count("restart-on-failure")) job.restart_on_failure = true;
  if (vm.count("heartbeat-interval"))
    job.heartbeat.interval = atl::cli::value_or_exit(
        "headnode", atl::parse_duration(vm["heartbeat-interval"].as<std::string>()),
        "--heartbeat-interval");
  if (vm.count("heartbeat-timeout"))
    job.heartbeat.timeout = atl::cli::value_or_exit(
        "headnode", atl::parse_duration(vm["heartbeat-timeout"].as<std::string>()),
        "--heartbeat-timeout");
  if (vm.count("metrics-port")) {
    opt.metrics_port = vm["metrics-port"].as<int>();
    if (opt.metrics_port < 0 || opt.metrics_port > 65535)
      atl::cli::usage_error("headnode", "--metrics-port: must be between 0 and 65535");
  }
  if (vm.count("metrics-bind")) {
    if (!vm.count("metrics-port"))
      atl::cli::usage_error("headnode", "--metrics-bind needs --metrics-port");
    opt.metrics_bind = vm["metrics-bind"].as<std::string>();
  }
  if (vm.count("dashboard-port")) {
    const std::string v = vm["dashboard-port"].as<std::string>();
    opt.dashboard_port_given = true;
    if (v == "off") {
      opt.dashboard_port = -1;
    } else {
      std::size_t used = 0;
      int port = -1;
      try {
        port = std::stoi(v, &used);
      } catch (const std::exception&) {
      }
      if (used != v.size() || port < 0 || port > 65535)
        atl::cli::usage_error("headnode",
                              "--dashboard-port: '" + v + "' is not a port (0 to 65535) or 'off'");
      opt.dashboard_port = port;
    }
  } else if (job.mode == atl::JobMode::ray) {
    opt.dashboard_port = 8266;
  }
  for (const char* flag : {"dashboard-bind", "dashboard-token-file"})
    if (vm.count(flag) && opt.dashboard_port < 0)
      atl::cli::usage_error("headnode", std::string("--") + flag + " needs the dashboard on");
  if (vm.count("dashboard-bind")) opt.dashboard_bind = vm["dashboard-bind"].as<std::string>();
  if (vm.count("dashboard-token-file"))
    opt.dashboard_token_file = vm["dashboard-token-file"].as<std::string>();
  if (vm.count("web-terminal")) {
    const std::string v = vm["web-terminal"].as<std::string>();
    if (v != "on" && v != "off")
      atl::cli::usage_error("headnode", "--web-terminal: '" + v + "' is not on or off");
    opt.web_terminal.enabled = v == "on";
  }
  if (vm.count("web-terminal-limit")) {
    const std::string v = vm["web-terminal-limit"].as<std::string>();
    if (v.empty() || v.size() > 3 || v.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(v) < 1 || std::stoi(v) > 100)
      atl::cli::usage_error("headnode",
                            "--web-terminal-limit: '" + v + "' is not a number from 1 to 100");
    opt.web_terminal.per_pod_limit = std::stoi(v);
  }
  if ((vm.count("web-terminal") || vm.count("web-terminal-limit")) && opt.dashboard_port < 0)
    atl::cli::usage_error("headnode", "--web-terminal needs the dashboard on");
  if (vm.count("linger"))
    opt.linger = atl::cli::value_or_exit(
        "headnode", atl::parse_duration(vm["linger"].as<std::string>()), "--linger");
  if (vm.count("history")) {
    const std::string v = vm["history"].as<std::string>();
    std::size_t used = 0;
    long long n = -1;
    try {
      n = std::stoll(v, &used);
    } catch (const std::exception&) {
    }
    if (v.empty() || used != v.size() || n < 0 || n > 10'000'000)
      atl::cli::usage_error("headnode", "--history: '" + v + "' is not a count from 0 to 10000000");
    opt.history = static_cast<std::size_t>(n);
  }
  if (job.job_id.empty()) {
    std::mt19937_64 rng(std::random_device{}());
    job.job_id = atl::make_job_id(rng);
  }
  if (auto ok = atl::validate_job_spec(job); !ok) atl::cli::usage_error("headnode", ok.error());
  if (job.mode == atl::JobMode::ray) {
    // Ray comes from the image: say so now if it is not there (looked for,
    // not started: `ray --version` was ~0.8 s of CPU before anything else).
    if (auto ray = atl::os::check_ray(opt.ray_bin); !ray)
      atl::cli::usage_error("headnode", "--mode ray: " + ray.error() +
                                            ": install Ray in the image or give its path with "
                                            "--ray-bin");
    // The Python that runs the readiness check and has the ray module: the
    // one beside `ray` when it is given as a path (a virtualenv), else python3.
    auto slash = opt.ray_bin.rfind('/');
    if (slash != std::string::npos &&
        ::access((opt.ray_bin.substr(0, slash) + "/python3").c_str(), X_OK) == 0)
      opt.ray_python = opt.ray_bin.substr(0, slash) + "/python3";
  }
  opt.state_dir =
      vm.count("state-dir") ? vm["state-dir"].as<std::string>() : "./atl-state/" + job.job_id;
  if (opt.advertise.empty())
    opt.advertise = (opt.bind == "0.0.0.0" || opt.bind == "::") ? atl::os::host_name() : opt.bind;
  if (auto ok = atl::os::check_resolvable(opt.bind); !ok)
    atl::cli::usage_error("headnode", "--bind: " + ok.error());
  if (opt.dashboard_bind.empty()) opt.dashboard_bind = opt.bind;
  if (auto ok = atl::os::check_resolvable(opt.dashboard_bind); !ok)
    atl::cli::usage_error("headnode", "--dashboard-bind: " + ok.error());
  if (vm.count("tls-dir")) opt.tls_dir = vm["tls-dir"].as<std::string>();
  opt.insecure = vm.count("insecure") > 0;
  opt.print_login_link = vm.count("print-login-link") > 0 || ::isatty(STDOUT_FILENO) == 1;
  if (opt.insecure && !opt.tls_dir.empty())
    atl::cli::usage_error("headnode", "--tls-dir and --insecure exclude each other");
  // A Ray GCS port the job names, on one host: refused now if taken (the
  // free ones are found once the head's own listeners are bound).
  if (job.mode == atl::JobMode::ray && job.ray_port_given && opt.local_workers > 0 &&
      opt.local_workers == atl::total_worker_pods(job)) {
    const std::string host = atl::ray_node_host("127.0.0.1");
    if (!atl::os::ProbeListener::open(host, static_cast<std::uint16_t>(job.ray_port))) {
      // Named when this user may see who holds it (another job's Ray head).
      const std::string holder = atl::os::describe_port_holder(
          atl::os::who_listens_on(static_cast<std::uint16_t>(job.ray_port)));
      atl::cli::usage_error(
          "headnode", "--ray-port: " + std::to_string(job.ray_port) + " is taken on " + host +
                          " (" + (holder.empty() ? "another Ray on this host?" : "by " + holder) +
                          "): name a free one, or leave it out and this job "
                          "gets one of its own");
    }
  }
  return opt;
}

void make_dirs(const std::string& path) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    ::mkdir(partial.c_str(), 0755);
  }
}

// The state dir must take files before anything starts: a job whose logs
// cannot be written is refused, not run blind.
void prepare_state_dir(const HeadOptions& opt) {
  make_dirs(opt.state_dir + "/logs");
  // Private to the job's user, also when an earlier version made it 0755.
  ::chmod(opt.state_dir.c_str(), 0700);
  for (const std::string& dir : {opt.state_dir, opt.state_dir + "/logs"}) {
    if (auto ok = atl::os::check_writable_dir(dir); !ok)
      atl::cli::usage_error("headnode", "--state-dir: " + ok.error());
  }
}

// The job's credentials: mounted (--tls-dir) or kept from an earlier run of
// this job in the same state dir (so its workers still trust a restarted
// head), both checked now; or, for a new job, to be made (`to_make`, on a
// thread of its own: see main). Exits 2 naming the file when they are unusable.
struct HeadCredentials {
  std::optional<atl::os::TlsFiles> files;  // nullopt: --insecure
  bool to_make = false;
};

HeadCredentials head_credentials(const HeadOptions& opt) {
  if (opt.insecure) {
    std::cerr << "headnode: warning: --insecure: TLS is off; anyone who reaches this port can "
                 "run commands in the job and read its environment\n";
    return {};
  }
  std::string dir = opt.tls_dir.empty() ? opt.state_dir + "/tls" : opt.tls_dir;
  if (opt.tls_dir.empty() && ::access(atl::os::tls_files_in(dir).ca.c_str(), F_OK) != 0) {
    // Made later on a thread of its own; the folder now, so that its
    // absolute path is what ranks and local workers inherit.
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      atl::cli::usage_error("headnode",
                            "--state-dir: cannot create " + dir + ": " + std::strerror(errno));
    return {atl::os::tls_files_in(dir), true};
  }
  auto files = atl::os::load_tls_credentials(dir);
  if (!files) atl::cli::usage_error("headnode", "--tls-dir: " + files.error());
  return {std::move(files).value(), false};
}

// The job's store and, for a head restarted on its state dir, the job it
// resumes.
struct DurableState {
  std::shared_ptr<atl::os::JobStore> store;
  std::shared_ptr<const atl::os::JobRecord> resumed;
};

atl::Expected<DurableState> open_durable_state(const std::string& path, const std::string& job_id) {
  auto opened = atl::os::JobStore::open(path);
  if (!opened) return atl::make_error(opened.error());
  DurableState state{std::move(opened).value(), nullptr};
  auto found = state.store->load(job_id);
  if (!found) return atl::make_error(found.error());
  if (found->has_value()) state.resumed = std::make_shared<atl::os::JobRecord>(std::move(**found));
  return state;
}

// On a thread of its own (or, without one, now).
std::future<atl::Expected<DurableState>> open_state_async(const HeadOptions& opt) {
  return atl::async_or_now([path = opt.state_dir + "/state.db", job_id = opt.job.job_id] {
    return open_durable_state(path, job_id);
  });
}

// The names the job's certificate is for, besides its defaults.
std::vector<std::string> credential_hosts(const HeadOptions& opt) {
  return {opt.advertise, opt.bind, opt.dashboard_bind, atl::os::host_name()};
}

// A job whose pods are all on this host gets ports of its own, found free
// once the head's own listeners are bound (the dashboard's bind to any free
// port was once given a MASTER_PORT just found free and let go: rank 0 then
// could not bind it).
void settle_local_ports(HeadOptions& opt) {
  // Every pod on this host: torch's 29500 would be every such job's store
  // (the second job's rank 0 could not bind it, or its ranks would join the
  // first's). A free port instead, unless the job names one (its spec,
  // --master-port, or MASTER_PORT in its env).
  if (opt.job.mode == atl::JobMode::spmd && !opt.job.master_port_given &&
      !opt.job.env.count("MASTER_PORT") && opt.local_workers > 0 &&
      opt.local_workers == atl::total_worker_pods(opt.job)) {
    if (auto free = atl::os::PortReservation::make(opt.bind)) opt.job.master_port = free->port();
  }
  // Ray on this host alone: the job's own ports where Ray's are fixed (two
  // ray jobs on one host took the same GCS port and the second burned its
  // budget on "Address already in use"). A port the job names is checked.
  if (opt.job.mode == atl::JobMode::ray && opt.local_workers > 0 &&
      opt.local_workers == atl::total_worker_pods(opt.job))
    settle_local_ray_ports(opt.job);
}

// Ray mode: the port Ray's dashboard will take on the head pod's loopback,
// found free now (0: any; Ray's default 8265 taken: any, with a warning
// unless atl's own dashboard has it; another taken: a usage error). Ray
// starts on it once the workers joined.
void settle_ray_dashboard_port(atl::JobSpec& job, int atl_dashboard_port) {
  if (job.mode != atl::JobMode::ray) return;
  const int wanted = job.ray_dashboard_port;
  auto free = atl::os::ProbeListener::open("127.0.0.1", static_cast<std::uint16_t>(wanted));
  if (!free && wanted == atl::JobSpec{}.ray_dashboard_port) {
    free = atl::os::ProbeListener::open("127.0.0.1");
    if (free && wanted != atl_dashboard_port)
      std::cerr << "headnode: warning: Ray's dashboard: port " << wanted
                << " is taken on 127.0.0.1, using " << free->port()
                << " (give --ray-dashboard-port to choose)\n";
  }
  if (!free) atl::cli::usage_error("headnode", "--ray-dashboard-port: " + free.error());
  job.ray_dashboard_port = free->port();
}

// The dashboard, listening before anything starts (a port given and taken
// is a failure now, not after the job began); its address for the supervisor.
// `settle` runs before a failure exits (the threads still at work end first).
std::unique_ptr<atl::headnode::DashboardServer> bind_dashboard(
    const HeadOptions& opt, const std::optional<atl::os::TlsFiles>& tls, std::string* url,
    std::string* token, const std::function<void()>& settle) {
  if (opt.dashboard_port < 0) return nullptr;
  auto loaded = opt.dashboard_token_file.empty()
                    ? atl::os::load_or_make_token_file(opt.state_dir + "/dashboard-token")
                    : atl::os::load_token_file(opt.dashboard_token_file);
  if (!loaded) {
    settle();
    atl::cli::usage_error(
        "headnode",
        (opt.dashboard_token_file.empty() ? "--state-dir: " : "--dashboard-token-file: ") +
            loaded.error());
  }
  // A Kubernetes secret is mounted 0644 unless its defaultMode says: taken,
  // with a word, since anyone in the pod can then log in as the operator.
  if (!opt.dashboard_token_file.empty() && atl::os::readable_by_others(opt.dashboard_token_file))
    std::cerr << "headnode: warning: --dashboard-token-file " << opt.dashboard_token_file
              << " can be read by others than its owner: chmod 600 it (or defaultMode: 0600 "
                 "for a mounted secret)\n";
  atl::headnode::DashboardConfig config;
  config.bind = opt.dashboard_bind;
  config.port = opt.dashboard_port;
  config.port_given = opt.dashboard_port_given;
  config.tls = tls;
  config.token = *loaded;
  config.logs_dir = opt.state_dir + "/logs";
  config.job_id = opt.job.job_id;
  auto dashboard = std::make_unique<atl::headnode::DashboardServer>(std::move(config));
  std::string note;
  auto port = dashboard->bind(&note);
  if (!port) {
    settle();
    std::cerr << "headnode: --dashboard-port: " << port.error() << "\n";
    std::exit(kExitFailed);
  }
  if (!note.empty()) std::cerr << "headnode: warning: dashboard: " << note << "\n";
  const bool any = opt.dashboard_bind == "0.0.0.0" || opt.dashboard_bind == "::";
  *url = std::string(dashboard->scheme()) + "://" + (any ? opt.advertise : opt.dashboard_bind) +
         ":" + std::to_string(*port);
  *token = *loaded;
  return dashboard;
}

// The worker pods atl does not start itself (not --local-workers), each
// with the exact command that joins it: a newcomer's first question.
void print_join_commands(const HeadOptions& opt, const std::string& address,
                         const std::optional<atl::os::TlsFiles>& tls) {
  const int pods = atl::total_worker_pods(opt.job);
  if (opt.local_workers >= pods) return;
  std::cout << "job " << opt.job.job_id << ": waiting for " << pods - opt.local_workers
            << " worker pod" << (pods - opt.local_workers == 1 ? "" : "s")
            << "; start each with:" << std::endl;
  // A few lines, not thousands (a platform starts big jobs' pods itself).
  constexpr int kShown = 4;
  for (int i = opt.local_workers; i < pods; ++i) {
    if (i - opt.local_workers == kShown && pods - i > 1) {
      std::cout << "  ... and " << pods - i << " more, each with --name "
                << atl::worker_pod_name(opt.job.job_id, i) << " up to "
                << atl::worker_pod_name(opt.job.job_id, pods - 1) << std::endl;
      break;
    }
    std::vector<std::string> argv = {"workernode", "--head", address, "--name",
                                     atl::worker_pod_name(opt.job.job_id, i)};
    if (tls) {
      argv.insert(argv.end(), {"--tls-dir", atl::os::absolute_dir(tls->dir)});
    } else {
      argv.push_back("--insecure");
    }
    std::cout << "  " << atl::shell_join(argv) << std::endl;
  }
}

// --local-workers' pods, started behind their start gate (open_gate once
// the head listens at `address`); exits 1 with the line when one cannot start.
std::unique_ptr<atl::headnode::LocalPods> start_local_pods(
    const HeadOptions& opt, const std::string& address,
    const std::shared_ptr<std::atomic<bool>>& ending) {
  atl::headnode::LocalPodsConfig pods{
      address, {}, opt.pod_restart_delay, ending, atl::pod_flags_for_spec(opt.job.node_spec)};
  // Ray on one host: a node per loopback address (the head's is 127.0.0.1).
  pods.own_loopback = opt.job.mode == atl::JobMode::ray;
  if (opt.isolate_local_pods != "no") {
    auto can = atl::os::pid_namespaces_available();
    pods.own_pid_namespace = static_cast<bool>(can);
    if (!can)
      atl::component_logger("headnode")
          ->info("local workers share this host's processes ({}): atlctl run there sees them all",
                 can.error());
  }
  for (int i = 0; i < opt.local_workers; ++i)
    pods.pod_names.push_back(atl::worker_pod_name(opt.job.job_id, i));
  auto local_pods = std::make_unique<atl::headnode::LocalPods>(std::move(pods));
  if (auto started = local_pods->start(); !started) {
    std::cerr << "headnode: " << started.error() << "\n";
    std::exit(kExitFailed);
  }
  return local_pods;
}

// The PID namespace the head's own processes start in (PodNamespace), where
// --isolate-local-pods allows; nullptr where it is no or the host refuses
// (local_pods said so, or the next line does).
std::unique_ptr<atl::os::PodNamespace> start_head_pod(const HeadOptions& opt) {
  if (opt.isolate_local_pods == "no" || !atl::os::pid_namespaces_available()) return nullptr;
  auto pod = atl::os::PodNamespace::start();
  if (!pod) {
    if (opt.isolate_local_pods == "yes") {
      std::cerr << "headnode: --isolate-local-pods yes: " << pod.error()
                << "; pass --isolate-local-pods auto or no\n";
      std::exit(kExitFailed);
    }
    atl::component_logger("headnode")
        ->info("the head's own processes share this host's ({})", pod.error());
    return nullptr;
  }
  atl::os::set_commands_namespace(pod->get());
  return std::move(pod).value();
}

}  // namespace

int main(int argc, char** argv) {
  atl::os::keep_own_files_private();
  atl::os::use_few_malloc_arenas();
  HeadOptions opt = parse_options(argc, argv);
  // The entrypoint is the job's, not the head's title: the guide's cleanup
  // (`ps -ef | grep python | ... | xargs kill -9`, `pkill -f python`) on
  // this host kills the ranks, never the head (process_title.hpp).
  atl::os::set_process_title(atl::os::title_without_command({argv, argv + argc}, {"--entrypoint"}));
  prepare_state_dir(opt);
  auto credentials = head_credentials(opt);
  const auto& tls = credentials.files;
  atl::os::export_tls_choice(tls);  // the driver and local workers inherit it
  atl::os::TerminationSignals::block_in_this_thread();
  // --local-workers: the pods start now, beside the rest of the head's
  // start-up, and wait at their start gate until the head listens
  // (start_gate.hpp): their loading overlaps the head's instead of following it.
  auto ending = std::make_shared<std::atomic<bool>>(false);
  std::optional<atl::os::PortReservation> held_port;  // --port 0: the one the pods are told
  std::uint16_t port_wanted = opt.port;
  std::unique_ptr<atl::headnode::LocalPods> local_pods;
  if (opt.local_workers > 0) {
    // The pods are forks of this process (local_pods.hpp), started before
    // anything else: a new job's credentials are made after, on a thread,
    // beside their start. They reach the head over their line, without TLS
    // (pod_line.hpp), and load the files only if they ever go over TCP.
    if (opt.port == 0) {
      auto held = atl::os::PortReservation::make(opt.bind);
      if (!held) {
        std::cerr << "headnode: " << held.error() << "\n";  // as a failed listen would
        return kExitFailed;
      }
      port_wanted = held->port();
      held_port = std::move(held).value();
    }
    local_pods = start_local_pods(opt, opt.advertise + ":" + std::to_string(port_wanted), ending);
  }
  // The head's own processes (the driver, Ray's head, the head pod's ranks)
  // in a pod of their own too, started now that the local pods (forks of
  // this process) are: `ps -ef`, `pkill -f python`, the guide's cleanup run
  // beside the driver reach this job's processes only, and nothing of them
  // outlives the head. From this (main) thread: the namespace lives as long.
  std::unique_ptr<atl::os::PodNamespace> head_pod = start_head_pod(opt);
  // The job's durable state (a head restarted on this state dir resumes it)
  // opens on a thread of its own, as a new job's keys and certificates (and
  // OpenSSL's start-up) are made on another, while the dashboard binds and
  // the actor system starts.
  std::future<atl::Expected<DurableState>> state = open_state_async(opt);
  std::future<atl::Expected<atl::os::TlsFiles>> made;
  if (credentials.to_make)
    made = atl::os::generate_tls_credentials_async(tls->dir, opt.job.job_id, credential_hosts(opt));
  auto log = atl::component_logger("headnode");

  // A refusal exits the process: the threads at work end first.
  auto settle = [&made, &state] {
    if (made.valid()) made.wait();
    if (state.valid()) state.wait();
  };
  auto refuse = [&settle](const std::string& message) {
    settle();
    atl::cli::usage_error("headnode", message);
  };
  if (made.valid()) {
    if (auto ready = made.get(); !ready) refuse("--tls-dir: " + ready.error());
  }
  std::string dashboard_url, dashboard_token;
  auto dashboard = bind_dashboard(opt, tls, &dashboard_url, &dashboard_token, settle);
  settle_local_ports(opt);
  // Ray mode: the job's Ray token, made once (0600) beside the dashboard's
  // and kept across head restarts; the pods get it with their launches,
  // over mTLS, and the dashboard's /ray/ relay with each request.
  // Ray's dashboard takes its port after atl's took its own (both may
  // want 8265: a pod's manifest gives atl's that port).
  std::string ray_token;
  if (opt.job.mode == atl::JobMode::ray) {
    auto loaded = atl::os::load_or_make_token_file(opt.state_dir + "/ray-token");
    if (!loaded) refuse("--state-dir: " + loaded.error());
    ray_token = *loaded;
    settle_ray_dashboard_port(opt.job, opt.dashboard_port);
    if (dashboard)
      dashboard->relay({"Ray's dashboard", "/ray", "127.0.0.1",
                        static_cast<std::uint16_t>(opt.job.ray_dashboard_port),
                        "Bearer " + ray_token, "ray job submit in the head pod, or the driver"});
  }

  // TensorBoard (--tensorboard-logdir, spec `tensorboard`): the image's,
  // found or said missing; the job runs either way.
  std::unique_ptr<atl::headnode::TensorBoard> tensorboard;
  if (!opt.job.tensorboard_logdir.empty()) {
    if (!dashboard) {
      std::cerr << "headnode: warning: --tensorboard-logdir: the dashboard is off "
                   "(--dashboard-port off), so TensorBoard is not started\n";
    } else if (auto tb = atl::headnode::TensorBoard::start(opt.tensorboard_bin,
                                                           opt.job.tensorboard_logdir,
                                                           opt.state_dir + "/tensorboard.log");
               !tb) {
      std::cerr << "headnode: warning: TensorBoard: " << tb.error()
                << ": the dashboard serves no /tensorboard/\n";
    } else {
      tensorboard = std::move(tb).value();
      // Its data queries are POSTs (scalars of several runs at once): reads.
      dashboard->relay({"TensorBoard",
                        "/tensorboard",
                        "127.0.0.1",
                        tensorboard->port(),
                        "",
                        "tensorboard in the head pod",
                        {"(/experiment/[^/]+)?/data/plugin/.*"}});
    }
  }

  int code = kExitFailed;
  std::unique_ptr<atl::headnode::MetricsServer> metrics;
  std::shared_ptr<atl::headnode::HeadQueries> queries;
  std::unique_ptr<atl::os::ShutdownWatchdog> watchdog;
  {
    atl::AtlSystemConfig cfg{tls};
    caf::actor_system sys{cfg};
    // The store, opened meanwhile on its thread; a refusal is still the one
    // line (nothing started yet: the pods at their gate end with the head).
    auto opened = state.get();
    if (!opened) {
      std::cerr << "headnode: --state-dir: " << opened.error() << "\n";
      return atl::cli::kExitUsage;
    }
    std::shared_ptr<atl::os::JobStore> store = std::move(opened->store);
    std::shared_ptr<const atl::os::JobRecord> resumed = std::move(opened->resumed);
    // The job's id before what it runs: every later line, file and command
    // names it.
    std::cout << "job " << opt.job.job_id << std::endl;
    std::unique_ptr<atl::LocalDoor> door;  // closed before the actor system ends
    auto sink = atl::spawn_log_sink(sys, opt.state_dir + "/logs", /*echo=*/true);
    auto reader = atl::spawn_log_reader(sys, opt.state_dir + "/logs");
    // A resumed job's new head writes into its new attempt from its first
    // line (it wrote its start-up into the previous attempt's head.log).
    if (resumed)
      caf::anon_send(sink, atl::sink_order::NewAttempt{atl::os::resumed_attempt(*resumed)});
    // The head's own log lines also go to logs/head.log (atlctl logs -p head),
    // until the actor system ends (the guard, declared after it, goes first).
    atl::set_log_forwarder([sink](const std::string& line) {
      caf::anon_send(sink, atl::log_atom::value, atl::StreamId::head_log(), line + "\n",
                     std::int32_t{1});
    });
    struct StopForwarding {
      ~StopForwarding() { atl::set_log_forwarder({}); }
    } stop_forwarding;
    auto outcome = std::make_shared<std::promise<int>>();
    auto result = outcome->get_future();
    atl::SupervisorConfig config;
    auto& settings = config.settings;
    settings.job = opt.job;
    settings.advertised_host = opt.advertise;
    settings.linger = opt.linger;
    settings.ray_bin = opt.ray_bin;
    settings.ray_python = opt.ray_python;
    settings.ray_token = ray_token;
    settings.finished_kept = opt.history;
    settings.terminals = opt.web_terminal;
    settings.head_dns_name = atl::os::own_dns_name(atl::head_pod_name(opt.job.job_id),
                                                   opt.advertise, std::chrono::seconds(1));
    settings.head_interface = atl::os::interface_of_address(opt.advertise);
    settings.clock_ticks = ::sysconf(_SC_CLK_TCK);
    config.sink = sink;
    config.outcome = outcome;
    config.ending = ending;
    config.store = std::move(store);
    config.resumed = std::move(resumed);
    settings.dashboard_url = dashboard_url;
    settings.dashboard_token = dashboard_token;
    config.reader = reader;
    if (const char* t = std::getenv("ATL_TESTING_SUPERVISOR_THROW"))
      config.testing_throw_on_info = std::string(t) == "info";
    auto supervisor = atl::spawn_job_supervisor(sys, std::move(config));
    // However the supervisor ends (an exception included), main hears of it:
    // an outcome it did not hand over is a failure, never a wait forever.
    supervisor->attach_functor([outcome](const caf::error&) { atl::settle_outcome(*outcome, 1); });
    auto port = atl::publish_actor(sys, supervisor, port_wanted, opt.bind);
    held_port.reset();  // the listener has it now
    if (!port) {
      const std::string holder =
          port_wanted > 0 ? atl::os::describe_port_holder(atl::os::who_listens_on(port_wanted))
                          : std::string();
      std::cerr << "headnode: cannot listen on " << opt.bind << ":" << port_wanted << ": "
                << (holder.empty() ? atl::error_words(port.error(), sys) : "taken by " + holder)
                << ": pass another --port (0: any free one)\n";
      caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(reader, caf::exit_reason::user_shutdown);
      dashboard.reset();
      return kExitFailed;
    }
    // atlctl in this pod comes in through the local door (local_door.hpp):
    // no TLS start-up and handshake of a fresh process. Without one (an
    // error), atlctl goes over TCP as everywhere else.
    {
      auto ca_pem = atl::os::door_ca(tls ? tls->ca : "");
      auto listener = ca_pem ? atl::os::listen_door(opt.bind, *port)
                             : atl::Expected<int>(atl::make_error("cannot read " + tls->ca));
      auto opened =
          listener
              ? atl::LocalDoor::serve(sys, supervisor, *listener, std::move(*ca_pem))
              : atl::Expected<std::unique_ptr<atl::LocalDoor>>(atl::make_error(listener.error()));
      if (opened)
        door = std::move(*opened);
      else
        log->warn("{}: atlctl here goes over TCP", opened.error());
    }
    std::string address = opt.advertise + ":" + std::to_string(*port);
    // The supervisor starts and the local workers, waiting at their gate,
    // connect at once; the rest of the head's start-up (the address file,
    // the job pointer, the dashboard) is done meanwhile (bench/results/launch.md).
    caf::anon_send(supervisor, atl::start_atom::value, *port);
    // Each local pod's gate is its line to the supervisor (pod_line.hpp): no
    // TCP, no TLS handshake between a head and the pods it forked.
    if (local_pods)
      for (int line : local_pods->open_gate())
        if (line >= 0) atl::serve_pod_line(sys, supervisor, line, *port);
    std::ofstream(opt.state_dir + "/address") << address << "\n";
    std::cout << "listening on " << address << std::endl;
    if (opt.job.ray_any_worker_ports)  // ray mode on one host: the job's own ports
      std::cout << "Ray's GCS at " << atl::ray_node_host("127.0.0.1") << ":" << opt.job.ray_port
                << " (ray status --address there; RAY_ADDRESS in the job's shells)" << std::endl;
    print_join_commands(opt, address, tls);
    // atlctl from any shell of the head pod finds the job here (job_pointer.hpp).
    atl::os::JobPointer pointer{opt.job.job_id,
                                atl::head_pod_name(opt.job.job_id),
                                address,
                                tls ? atl::os::absolute_dir(tls->dir) : "",
                                !tls,
                                0,
                                0,
                                {}};
    auto published = atl::os::publish_job_pointer(pointer);
    if (!published) log->warn("{} (atlctl needs --address there)", published.error());
    atl::os::PublishedJobPointer pointer_here(published ? *published : "", pointer.job_id,
                                              pointer.pod);
    log->info("job {} state dir {}", opt.job.job_id, opt.state_dir);
    queries = std::make_shared<atl::headnode::HeadQueries>(sys, supervisor, sink);
    if (dashboard) {
      if (opt.web_terminal.enabled)
        dashboard->offer_terminals(
            std::make_shared<atl::headnode::TerminalRelays>(sys, supervisor));
      dashboard->serve(queries);
      std::cout << "dashboard " << dashboard_url << std::endl;
      // The way in, for whoever sees this terminal (never into a log file
      // unless asked: the link holds the token).
      if (opt.print_login_link)
        std::cout << "login " << atl::login_link(dashboard_url, dashboard_token) << std::endl;
      if (tensorboard)
        std::cout << "tensorboard " << dashboard_url << "/tensorboard/ (logdir "
                  << opt.job.tensorboard_logdir << ")" << std::endl;
    }
    if (opt.metrics_port >= 0) {
      metrics = std::make_unique<atl::headnode::MetricsServer>(queries);
      auto served = metrics->start(opt.metrics_bind, opt.metrics_port);
      if (!served) {
        std::cerr << "headnode: --metrics-port: " << served.error() << "\n";
        metrics.reset();
        dashboard.reset();
        queries.reset();
        caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(reader, caf::exit_reason::user_shutdown);
        return kExitFailed;
      } else {
        std::cout << "metrics http://" << opt.metrics_bind << ":" << *served << "/metrics"
                  << std::endl;
      }
    }

    atl::os::TerminationSignals signals([&](int sig) {
      caf::anon_send(supervisor, atl::cancel_atom::value,
                     std::string(sig == SIGINT ? "SIGINT" : "SIGTERM"));
    });
    code = result.get();
    // The HTTP servers' and the door's threads end before the actor system does.
    door.reset();
    metrics.reset();
    dashboard.reset();
    queries.reset();
    tensorboard.reset();
    // Ranks were stopped (with the grace) before the outcome; what is left is
    // the actor system's teardown: bounded, so the head never hangs here.
    watchdog =
        std::make_unique<atl::os::ShutdownWatchdog>(opt.job.grace + std::chrono::seconds(5), code);
    // The end without the actor system's teardown (~2 ms of every job's end)
    // when nothing could miss it: no client is still connected over TCP (a
    // reply on its way to one would be lost with the process; the door's
    // replies are written, its threads ended above). What the teardown would
    // wait for is waited for: every actor's end (the supervisor's closes the
    // store, the sink's comes after every line is written, an executor's
    // after its process tree). Skipped: the middleman's and the scheduler's
    // ends (~2 ms of CPU here).
    caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(reader, caf::exit_reason::user_shutdown);
    if (auto clients = atl::os::clients_connected_on(*port); clients && *clients == 0) {
      sys.registry().await_running_count_equal(0);
      pointer_here.withdraw();
      if (local_pods) local_pods->stop_and_reap();
      std::cout.flush();
      std::fflush(nullptr);
      _exit(code);
    }
    // No unpublish first (a blocking request, ~1.2 ms of every job's end):
    // the actor system's end closes the listener with every connection.
  }
  if (local_pods) local_pods->stop_and_reap();
  std::cout.flush();
  return code;
}
