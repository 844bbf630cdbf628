#include "atl/core/ray_cluster.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>
#include <vector>

#include "atl/core/error_file.hpp"
#include "atl/os/child_process.hpp"
#include "atl/os/reach_probe.hpp"
#include "atl/os/run_capture.hpp"

using namespace std::chrono_literals;

namespace {

atl::JobSpec ray_job() {
  auto spec = atl::parse_job_spec_json(R"({
    "job_id": "jo-ray", "mode": "ray", "entrypoint": "python3 tune.py --trials 4",
    "workers": 2, "env": {"A": "1"},
    "runtime_env": {"env_vars": {"B": "2"}, "working_dir": "/work", "pip": ["ray[tune]"],
                    "py_modules": ["/mods/x"]},
    "spec": {"cpus": 4, "gpus": 0, "memory": "10Gi"}, "ray_port": 6400,
    "ray_dashboard_port": 8300
  })");
  EXPECT_TRUE(spec.ok()) << spec.error();
  return *spec;
}

// The shell must accept the line as written (sh -n: parse only).
bool parses(const std::string& command) {
  std::string quoted = "'";
  for (char c : command) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  return std::system(("/bin/sh -n -c " + quoted).c_str()) == 0;
}

}  // namespace

TEST(RayCluster, ModeRayTakesTheRuntimeEnvKeysOnlyRayApplies) {
  auto job = ray_job();
  EXPECT_EQ(job.mode, atl::JobMode::ray);
  EXPECT_EQ(job.ray_port, 6400);
  EXPECT_EQ(job.ray_dashboard_port, 8300);
  EXPECT_EQ(atl::JobSpec{}.ray_dashboard_port, 8265);  // Ray's own default
  for (const char* bad : {R"({"ray_dashboard_port": -1})", R"({"ray_dashboard_port": 65536})",
                          R"({"ray_dashboard_port": "8265"})"}) {
    auto refused = atl::parse_job_spec_json(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.error().find("ray_dashboard_port"), std::string::npos) << refused.error();
  }
  EXPECT_EQ(job.ray_runtime_env.at("pip"), R"(["ray[tune]"])");
  auto spmd = atl::parse_job_spec_json(R"({"runtime_env": {"pip": ["x"]}})");
  ASSERT_FALSE(spmd.ok());
  EXPECT_NE(spmd.error().find("only taken in mode ray"), std::string::npos) << spmd.error();
  EXPECT_EQ(*atl::parse_job_mode("ray"), atl::JobMode::ray);
  EXPECT_NE(atl::parse_job_mode("rey").error().find("spmd, driver or ray"), std::string::npos);
}

TEST(RayCluster, ResourcesComeFromTheSpecWithThirtyPercentForTheObjectStore) {
  auto job = ray_job();
  auto flags = atl::ray_resource_flags(job);
  std::vector<std::string> want = {
      "--num-cpus", "4", "--memory", "10737418240", "--object-store-memory", "3221225472"};
  EXPECT_EQ(flags, want);
  job.env["RAY_OBJECT_STORE_MEMORY"] = "1000000000";  // the job's override
  flags = atl::ray_resource_flags(job);
  EXPECT_EQ(flags.back(), "1000000000");
  atl::JobSpec bare;
  EXPECT_TRUE(atl::ray_resource_flags(bare).empty()) << "nothing stated, Ray detects";
}

TEST(RayCluster, HeadAndWorkersBindToTheirOwnAddresses) {
  auto job = ray_job();
  auto head = atl::ray_head_command(job, "/opt/ray/bin/ray", "10.0.0.1");
  // Ray's dashboard (its job API runs commands) on the head pod's loopback
  // only: atl's dashboard relays it behind its login.
  const std::string head_dir = atl::ray_private_dir(atl::ray_temp_dir("jo-ray", "h", 6400));
  EXPECT_EQ(head.rfind(head_dir + "exec /opt/ray/bin/ray start --head --block --port 6400 "
                                  "--node-ip-address 10.0.0.1 --dashboard-host 127.0.0.1 "
                                  "--dashboard-port 8300",
                       0),
            0u)
      << head;
  EXPECT_EQ(head.find("0.0.0.0"), std::string::npos);
  // Each node its own temp dir, short enough for the sockets inside.
  const std::string head_tmp = atl::ray_temp_dir("jo-ray", "h", job.ray_port);
  EXPECT_NE(head.find("--temp-dir " + head_tmp + "/r "), std::string::npos) << head;
  EXPECT_LT(head_tmp.size(), 30u);
  EXPECT_NE(head_tmp, atl::ray_temp_dir("jo-ray", "w0", job.ray_port));
  EXPECT_NE(head_tmp, atl::ray_temp_dir("jo-other", "h", job.ray_port));
  // Two jobs of one id on one host, each on its own GCS port: apart.
  EXPECT_NE(head_tmp, atl::ray_temp_dir("jo-ray", "h", job.ray_port + 1));
  EXPECT_TRUE(parses(head));
  auto worker = atl::ray_worker_command(job, "ray", "python3", "10.0.0.1", "10.0.0.2", 60s, 1);
  EXPECT_NE(worker.find("--temp-dir " + atl::ray_temp_dir("jo-ray", "w1", job.ray_port)),
            std::string::npos);
  // Ray's fixed per-node ports stay Ray's where the job is not on one host.
  for (const auto& cmd : {head, worker})
    for (const char* flag :
         {"--ray-client-server-port", "--dashboard-agent-listen-port", "--min-worker-port"})
      EXPECT_EQ(cmd.find(flag), std::string::npos) << cmd;
  EXPECT_NE(worker.find("ray health-check --address 10.0.0.1:6400"), std::string::npos) << worker;
  // Before any Python start: atl-guard's TCP probe until the GCS listens;
  // then the image's Python until the head's node is alive there; `ray
  // health-check` only where that Python cannot ask.
  const auto probe = worker.find("until atl-guard --tcp-ready 10.0.0.1 6400;");
  EXPECT_NE(probe, std::string::npos) << worker;
  const auto head_alive = worker.find("python3 -c ");
  EXPECT_LT(probe, head_alive) << worker;
  EXPECT_LT(head_alive, worker.find("ray health-check")) << worker;
  // That Python is given the node's start, to run in its place where it can.
  EXPECT_NE(worker.find(" 10.0.0.1:6400 10.0.0.1 $deadline ray start --address 10.0.0.1:6400 "
                        "--block --node-ip-address 10.0.0.2"),
            std::string::npos)
      << worker;
  // `pkill -f raylet` (and a search for Ray's raylet) finds Ray's, not atl's waits.
  EXPECT_EQ(worker.find("raylet"), std::string::npos) << worker;
  EXPECT_NE(worker.find("do ray start --address 10.0.0.1:6400 --block --node-ip-address "
                        "10.0.0.2 --temp-dir"),
            std::string::npos)
      << worker;
  // Started again while the head's node is not in its GCS yet, never once it came up.
  EXPECT_NE(worker.find("if [ -e " + atl::ray_temp_dir("jo-ray", "w1", job.ray_port) +
                        "/r/ray_current_cluster ] || [ $(date +%s) -ge $deadline ]; then exit $rc"),
            std::string::npos)
      << worker;
  EXPECT_TRUE(parses(worker));
}

// Ray's dirs are 0777 and its logs 0644 as it makes them: under the node's
// temp dir, made 0700 (umask 077) by the job's user, no other uid reads or
// swaps them. Another user's dir, or a symlink, at that (predictable) name
// is refused with one line and exit 3, before Ray runs.
TEST(RayCluster, EachNodesTempDirIsTheUsersOwnAndPrivate) {
  char tmpl[] = "/tmp/atl-ray-dir-XXXXXX";
  const std::string base = ::mkdtemp(tmpl);
  const std::string dir = base + "/node";
  auto run = [&](const std::string& d) {
    return atl::os::run_capture(
        {"/bin/sh", "-c",
         atl::ray_private_dir(d) + "mkdir -p " + d + "/session && touch " + d +
             "/session/log && stat -c %a " + d + " " + d + "/session/log"},
        30s);
  };
  auto made = run(dir);
  ASSERT_TRUE(made.ok() && made->status) << (made.ok() ? made->output : made.error());
  EXPECT_EQ(made->status->code, 0) << made->output;
  EXPECT_EQ(made->output, "700\n600\n");
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);  // an earlier run's, opened up: closed again
  auto again = run(dir);
  ASSERT_TRUE(again.ok() && again->status);
  EXPECT_EQ(again->output.substr(0, 4), "700\n") << again->output;
  // A symlink planted at the name: refused, nothing made through it.
  const std::string link = base + "/link";
  ASSERT_EQ(::symlink(base.c_str(), link.c_str()), 0);
  auto planted = run(link);
  ASSERT_TRUE(planted.ok() && planted->status);
  EXPECT_EQ(planted->status->code, 3) << planted->output;
  EXPECT_EQ(planted->output,
            "atl: " + link + " is not this user's own directory: Ray is not started there\n");
  EXPECT_FALSE(std::filesystem::exists(base + "/session"));
  std::filesystem::remove_all(base);
}

// On one host, the job's own ports where Ray fixes them (set by headnode):
// the client server on the head, each node's dashboard agent, workers' ports
// from the OS.
TEST(RayCluster, AJobOnOneHostHasPortsOfItsOwn) {
  auto job = ray_job();
  job.ray_client_port = 41001;
  job.ray_agent_port = 41002;
  job.ray_any_worker_ports = true;
  auto head = atl::ray_head_command(job, "ray", "127.0.1.1");
  EXPECT_NE(head.find(" --ray-client-server-port 41001"), std::string::npos) << head;
  auto worker = atl::ray_worker_command(job, "ray", "python3", "127.0.1.1", "127.0.0.2", 60s, 0);
  EXPECT_EQ(worker.find("--ray-client-server-port"), std::string::npos) << worker;
  for (const auto& cmd : {head, worker}) {
    EXPECT_NE(cmd.find(" --dashboard-agent-listen-port 41002"), std::string::npos) << cmd;
    EXPECT_NE(cmd.find(" --min-worker-port 0 --max-worker-port 0"), std::string::npos) << cmd;
    EXPECT_TRUE(parses(cmd));
  }
}

TEST(RayCluster, TheDriverGetsRayAddressAndTheRuntimeEnv) {
  auto job = ray_job();
  auto env =
      atl::ray_driver_env(job, {"10.0.0.1:6380", "jo-ray"}, {"jo-ray-head-0", "eth0", "10.0.0.1"});
  EXPECT_EQ(env.at("RAY_ADDRESS"), "10.0.0.1:6400");
  EXPECT_EQ(env.at("A"), "1");
  EXPECT_EQ(env.at("B"), "2");
  EXPECT_EQ(env.at("ATL_ADDRESS"), "10.0.0.1:6380");
  auto config = nlohmann::json::parse(env.at("RAY_JOB_CONFIG_JSON_ENV_VAR"));
  const auto& re = config["runtime_env"];
  EXPECT_EQ(re["env_vars"]["B"], "2");
  EXPECT_EQ(re["working_dir"], "/work");
  EXPECT_EQ(re["pip"][0], "ray[tune]");
  EXPECT_EQ(re["py_modules"][0], "/mods/x");
  auto driver = atl::ray_driver_command(
      job, "/usr/bin/python3", "10.0.0.1",
      {{"jo-ray-worker-0", "10.0.0.2"}, {"jo-ray-worker-1", "10.0.0.3"}}, 60s);
  EXPECT_NE(driver.find("&& exec /bin/sh -c 'python3 tune.py --trials 4'"), std::string::npos)
      << driver;
  EXPECT_EQ(driver.find("raylet"), std::string::npos) << driver;
  EXPECT_NE(driver.find(R"({"10.0.0.2":"jo-ray-worker-0","10.0.0.3":"jo-ray-worker-1"})"),
            std::string::npos)
      << driver;
  EXPECT_TRUE(parses(driver));
}

// Every combination of a small cluster (head + 2 workers: 3 Ray nodes, each
// up or ended) and the driver, against the rule written out by hand.
TEST(RayCluster, RecoverRestartsTheDriverAloneOnlyOnAnIntactCluster) {
  using atl::RayRecovery;
  for (bool driver_ended : {false, true}) {
    for (int up = 0; up <= 3; ++up) {
      const int ended = 3 - up;
      atl::RayProcesses p{driver_ended, up, ended};
      RayRecovery want = !driver_ended ? RayRecovery::driver_stopping
                         : ended == 0  ? RayRecovery::driver_only
                         : up == 0     ? RayRecovery::whole_cluster
                                       : RayRecovery::cluster_stopping;
      EXPECT_EQ(atl::ray_recovery(p), want) << "driver_ended=" << driver_ended << " up=" << up;
      EXPECT_EQ(atl::ray_cluster_broken(p), up > 0 && ended > 0) << "up=" << up;
    }
  }
  // A node lost with its pod counts as ended: no driver-only recover.
  EXPECT_EQ(atl::ray_recovery({true, 2, 1}), RayRecovery::cluster_stopping);
  EXPECT_EQ(atl::ray_recovery({true, 0, 0}), RayRecovery::whole_cluster);
}

// A stand-in `ray` package in a directory of its own (Ray itself is in the
// ray_mode tests): `files` maps a path under the directory to its text. A
// command runs with the directory as PYTHONPATH (and `env` besides); the
// directory goes with the object.
struct StandInRay {
  std::string dir;

  explicit StandInRay(const std::map<std::string, std::string>& files) {
    char tmpl[] = "/tmp/atl-fake-ray-XXXXXX";
    dir = ::mkdtemp(tmpl);
    for (const auto& [path, text] : files) {
      std::filesystem::create_directories(std::filesystem::path(dir + "/" + path).parent_path());
      std::ofstream(dir + "/" + path) << text;
    }
  }
  ~StandInRay() { std::filesystem::remove_all(dir); }
  StandInRay(const StandInRay&) = delete;
  StandInRay& operator=(const StandInRay&) = delete;

  // The command's output and exit code (-1: it did not exit).
  std::pair<std::string, int> run(const std::string& command,
                                  const std::map<std::string, std::string>& env = {}) const {
    ::setenv("PYTHONPATH", dir.c_str(), 1);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    auto run = atl::os::run_capture({"/bin/sh", "-c", command}, 60s);
    ::unsetenv("PYTHONPATH");
    for (const auto& [k, v] : env) ::unsetenv(k.c_str());
    EXPECT_TRUE(run.ok()) << run.error();
    if (!run.ok()) return {"", -1};
    return {run->output, run->status ? run->status->code : -1};
  }
};

// The readiness wait, run for real with /usr/bin/python3 over a stand-in
// `ray` package (`files`, as StandInRay takes them).
struct ReadinessRun {
  std::string output;
  int code = -1;
  std::string error_file;  // what the wait wrote to TORCHELASTIC_ERROR_FILE
  bool imported = false;   // whether the stand-in `ray` was imported
};

ReadinessRun run_readiness_wait(const std::map<std::string, std::string>& files,
                                std::uint16_t gcs_port, std::chrono::seconds wait) {
  StandInRay ray(files);
  // The stand-in says it was imported (in a file: the wait's output is checked).
  std::ofstream(ray.dir + "/ray/__init__.py", std::ios::app)
      << "\nopen(" << nlohmann::json(ray.dir + "/imported").dump() << ", 'w').close()\n";
  atl::JobSpec job;
  job.entrypoint = "echo the entrypoint ran";
  job.ray_port = gcs_port;
  auto driver = atl::ray_driver_command(
      job, "/usr/bin/python3", "127.0.0.1",
      {{"jo-ray-worker-0", "10.0.0.2"}, {"jo-ray-worker-1", "10.0.0.3"}}, wait, 1s);
  const std::string error_file = ray.dir + "/error.json";
  ReadinessRun got;
  std::tie(got.output, got.code) = ray.run(driver, {{"TORCHELASTIC_ERROR_FILE", error_file}});
  std::ifstream in(error_file);
  got.error_file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  got.imported = std::filesystem::exists(ray.dir + "/imported");
  return got;
}

// Ray's GCS client, as Ray 2.x has it: the node table by node id, each
// with its address and state. `nodes` is "address: state" (0 alive).
std::map<std::string, std::string> gcs_client_ray(const std::string& nodes) {
  return {{"ray/__init__.py",
           // A driver of its own would start worker processes for its job.
           "def init(**kw): raise RuntimeError('the wait joined Ray as a driver')\n"},
          {"ray/_raylet.py",
           "import collections\n"
           "Info = collections.namedtuple('Info', 'node_manager_address state')\n"
           "class GcsClient:\n"
           "    def __init__(self, address): self.address = address\n"
           "    def get_all_node_info(self, timeout=None):\n"
           "        return {i: Info(a, s) for i, (a, s) in enumerate({" +
               nodes + "}.items())}\n"},
          {"ray/core/__init__.py", ""},
          {"ray/core/generated/__init__.py", ""},
          {"ray/core/generated/gcs_pb2.py", "class GcsNodeInfo:\n    ALIVE = 0\n    DEAD = 1\n"}};
}

// The wait says every `progress_every` which nodes are not alive in Ray yet
// (asked of Ray's GCS: a dead node is not alive, an unknown one neither),
// then gives up naming them (exit 3: a ready timeout), in its log and in
// torchrun's error file; the entrypoint never runs. It never joins Ray as a
// driver (the stand-in's ray.init fails the wait).
TEST(RayCluster, TheReadinessWaitNamesTheMissingNodesAsItWaitsThenGivesUp) {
  auto gcs = atl::os::ProbeListener::open("127.0.0.1");
  ASSERT_TRUE(gcs.ok()) << gcs.error();
  auto run = run_readiness_wait(gcs_client_ray("'127.0.0.1': 0, '10.0.0.2': 1"), gcs->port(), 2s);
  EXPECT_EQ(atl::error_file_summary(run.error_file),
            "Ray cluster not ready after 2s: not alive in Ray: jo-ray-worker-0, jo-ray-worker-1")
      << run.error_file << run.output;
  EXPECT_EQ(run.code, atl::kRayNotReadyExit) << run.output;
  EXPECT_NE(run.output.find("[atl] waiting for Ray (1s of 2s): not alive yet: jo-ray-worker-0, "
                            "jo-ray-worker-1"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("the entrypoint ran"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("as a driver"), std::string::npos) << run.output;
}

// Every node alive in Ray's GCS: the entrypoint runs in the wait's place.
TEST(RayCluster, TheEntrypointRunsOnceEveryNodeIsAliveInRaysGcs) {
  auto gcs = atl::os::ProbeListener::open("127.0.0.1");
  ASSERT_TRUE(gcs.ok()) << gcs.error();
  auto run = run_readiness_wait(
      gcs_client_ray("'127.0.0.1': 0, '10.0.0.2': 0, '10.0.0.3': 0, '10.0.0.4': 1"), gcs->port(),
      20s);
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("[atl] Ray cluster ready: 3 nodes\nthe entrypoint ran"),
            std::string::npos)
      << run.output;
}

// While Ray's GCS does not take connections, Ray is not even imported (a
// Python start with Ray imported is ~0.4 s of CPU, taken from Ray's own
// start on the same cores): a TCP connect a try. A GCS that never listens
// is the head not alive, named with every pod.
TEST(RayCluster, WhileRaysGcsDoesNotListenTheWaitDoesNotImportRay) {
  auto closed = atl::os::PortReservation::make("127.0.0.1");  // bound, not listening
  ASSERT_TRUE(closed.ok()) << closed.error();
  auto run = run_readiness_wait(gcs_client_ray("'127.0.0.1': 0"), closed->port(), 2s);
  EXPECT_EQ(run.code, atl::kRayNotReadyExit) << run.output;
  EXPECT_EQ(atl::error_file_summary(run.error_file),
            "Ray cluster not ready after 2s: not alive in Ray: the head, jo-ray-worker-0, "
            "jo-ray-worker-1")
      << run.error_file << run.output;
  EXPECT_FALSE(run.imported) << run.output;
}

// A Ray without that GCS client (no ray._raylet.GcsClient): the wait joins
// Ray with ray.init and reads ray.nodes(), as before, and leaves it again.
TEST(RayCluster, ARayWithoutItsGcsClientIsAskedThroughRayInit) {
  auto gcs = atl::os::ProbeListener::open("127.0.0.1");
  ASSERT_TRUE(gcs.ok()) << gcs.error();
  const std::string nodes =
      "def init(**kw): print('joined', kw['address'].rsplit(':')[0], flush=True)\n"
      "def shutdown(): print('left', flush=True)\n"
      "def nodes(): return [{'NodeManagerAddress': a, 'Alive': a != '10.0.0.3'} for a in "
      "NODES]\n";
  auto missing = run_readiness_wait(
      {{"ray/__init__.py", "NODES = ['127.0.0.1', '10.0.0.2', '10.0.0.3']\n" + nodes}}, gcs->port(),
      2s);
  EXPECT_EQ(missing.code, atl::kRayNotReadyExit) << missing.output;
  EXPECT_NE(missing.output.find("joined 127.0.0.1"), std::string::npos) << missing.output;
  EXPECT_EQ(atl::error_file_summary(missing.error_file),
            "Ray cluster not ready after 2s: not alive in Ray: jo-ray-worker-1")
      << missing.error_file << missing.output;
  auto ready = run_readiness_wait(
      {{"ray/__init__.py", "NODES = ['127.0.0.1', '10.0.0.2', '10.0.0.4']\n" +
                               std::string("def init(**kw): print('joined', flush=True)\n"
                                           "def shutdown(): print('left', flush=True)\n"
                                           "def nodes(): return [{'NodeManagerAddress': a, "
                                           "'Alive': True} for a in NODES + ['10.0.0.3']]\n")}},
      gcs->port(), 20s);
  EXPECT_EQ(ready.code, 0) << ready.output;
  EXPECT_NE(ready.output.find("joined\nleft\n[atl] Ray cluster ready: 3 nodes\nthe entrypoint ran"),
            std::string::npos)
      << ready.output;
}

// A worker pod's command run for real over stand-ins: `ray` a script that
// logs its arguments (its `start` leaves the file Ray leaves once a node came
// up), the Python's `ray` package as `ray_files` says. The log's lines, in
// order; the command's exit code.
struct WorkerRun {
  std::vector<std::string> ray_calls;
  std::string output;
  int code = -1;
};

WorkerRun run_worker_command(const std::map<std::string, std::string>& ray_files,
                             std::uint16_t gcs_port, bool ray_bin_given = false) {
  StandInRay ray(ray_files);
  const std::string calls = ray.dir + "/calls";
  const std::string ray_bin = ray.dir + "/bin/ray";  // beside the stand-in package
  std::filesystem::create_directories(ray.dir + "/bin");
  if (!ray_bin_given)
    std::ofstream(ray_bin) << "#!/bin/sh\n"
                              "echo \"$1 $2 $3\" >> "
                           << calls
                           << "\n"
                              "while [ $# -gt 0 ]; do [ \"$1\" = --temp-dir ] && "
                              "mkdir -p \"$2\" && touch \"$2/ray_current_cluster\"; shift; done\n";
  ::chmod(ray_bin.c_str(), 0755);
  atl::JobSpec job;
  job.job_id = "jo-wait";
  job.ray_port = gcs_port;
  auto worker =
      atl::ray_worker_command(job, ray_bin, "/usr/bin/python3", "127.0.0.1", "127.0.0.2", 20s);
  WorkerRun got;
  std::tie(got.output, got.code) = ray.run(worker);
  std::ifstream in(calls);
  for (std::string line; std::getline(in, line);) got.ray_calls.push_back(line);
  std::filesystem::remove_all(atl::ray_temp_dir(job.job_id, "w0", job.ray_port));
  return got;
}

// Ray's `ray start` on a worker asks the GCS for the head's node every 2 s:
// a worker pod asks every 0.1 s itself (here: not alive, then dead, then
// alive) and starts its node once the head's is alive, with no `ray
// health-check` (a second Python start).
TEST(RayCluster, AWorkerStartsItsNodeOnceTheHeadsNodeIsAliveInTheGcs) {
  auto gcs = atl::os::ProbeListener::open("127.0.0.1");
  ASSERT_TRUE(gcs.ok()) << gcs.error();
  auto files = gcs_client_ray("");
  files["ray/_raylet.py"] =
      "import collections, os\n"
      "Info = collections.namedtuple('Info', 'node_manager_address state')\n"
      "asked = 0\n"
      "class GcsClient:\n"
      "    def __init__(self, address): pass\n"
      "    def get_all_node_info(self, timeout=None):\n"
      "        global asked\n"
      "        asked += 1\n"
      "        with open(os.path.dirname(__file__) + '/../calls', 'a') as f: print('asked', "
      "file=f)\n"
      "        if asked < 3: return {}\n"
      "        return {0: Info('127.0.0.9', 0), 1: Info('127.0.0.1', 0 if asked >= 5 else 1)}\n";
  auto run = run_worker_command(files, gcs->port());
  EXPECT_EQ(run.code, 0) << run.output;
  const std::vector<std::string> want = {
      "asked", "asked", "asked",
      "asked", "asked", "start --address 127.0.0.1:" + std::to_string(gcs->port())};
  EXPECT_EQ(run.ray_calls, want) << run.output;
}

// A Python whose Ray has no GCS client: `ray health-check` until the GCS
// answers, as before, then the node starts.
TEST(RayCluster, AWorkerWhosePythonCannotAskTheGcsWaitsWithRayHealthCheck) {
  auto gcs = atl::os::ProbeListener::open("127.0.0.1");
  ASSERT_TRUE(gcs.ok()) << gcs.error();
  auto run = run_worker_command({{"ray/__init__.py", ""}}, gcs->port());
  EXPECT_EQ(run.code, 0) << run.output;
  const std::string at = "--address 127.0.0.1:" + std::to_string(gcs->port());
  const std::vector<std::string> want = {"health-check " + at, "start " + at};
  EXPECT_EQ(run.ray_calls, want) << run.output;
}

// `ray` as pip writes it for this very Python (a console script whose `#!`
// names it): the Python that waited for the head's node runs Ray's main in
// its place, Ray already imported; the shell never starts `ray` itself.
// Here the first start fails before its node came up: the shell then asks
// `ray health-check` and starts it again (now a Python start of its own).
TEST(RayCluster, AWorkersWaitRunsRaysStartItselfWhereRayIsItsOwnConsoleScript) {
  auto gcs = atl::os::ProbeListener::open("127.0.0.1");
  ASSERT_TRUE(gcs.ok()) << gcs.error();
  auto files = gcs_client_ray("'127.0.0.1': 0");
  files["ray/scripts/__init__.py"] = "";
  // Ray's main as the stand-in has it: says where it runs, and its first
  // start fails before its node came up.
  files["ray/scripts/scripts.py"] =
      "import os, sys\n"
      "def main():\n"
      "    calls = os.path.dirname(__file__) + '/../../calls'\n"
      "    first = 'main' not in open(calls).read() if os.path.exists(calls) else True\n"
      "    waited = 'ray._raylet' in sys.modules\n"
      "    with open(calls, 'a') as f: print('main', ' '.join(sys.argv[1:4]), 'after the wait' if "
      "waited else 'alone', file=f)\n"
      "    if sys.argv[1] == 'start' and not first:\n"
      "        d = sys.argv[sys.argv.index('--temp-dir') + 1]\n"
      "        os.makedirs(d, exist_ok=True); open(d + '/ray_current_cluster', 'w').close()\n"
      "    return 1 if first else 0\n";
  files["bin/ray"] =
      "#!/usr/bin/python3\nimport sys\nfrom ray.scripts.scripts import main\nsys.exit(main())\n";
  auto run = run_worker_command(files, gcs->port(), /*ray_bin_given=*/true);
  EXPECT_EQ(run.code, 0) << run.output;
  const std::string at = "--address 127.0.0.1:" + std::to_string(gcs->port());
  const std::vector<std::string> want = {"main start " + at + " after the wait",
                                         "main health-check " + at + " alone",
                                         "main start " + at + " alone"};
  EXPECT_EQ(run.ray_calls, want) << run.output;
}

// Ray replaces 127.0.0.1 (and its names) with the machine's address: a
// one-host job's Ray head takes another loopback address; others are kept.
TEST(RayCluster, ANodeOnTheLoopbackNameRayReplacesTakesAnotherLoopbackAddress) {
  EXPECT_EQ(atl::ray_node_host("127.0.0.1"), "127.0.1.1");
  EXPECT_EQ(atl::ray_node_host("localhost"), "127.0.1.1");
  EXPECT_EQ(atl::ray_node_host("::1"), "127.0.1.1");
  EXPECT_EQ(atl::ray_node_host("127.0.0.2"), "127.0.0.2");
  EXPECT_EQ(atl::ray_node_host("10.0.0.1"), "10.0.0.1");
}

// Nodes that would share an address can never all be alive in Ray: refused
// at the plan, naming them and what to do, not after the readiness wait.
TEST(RayCluster, NodesSharingAnAddressAreRefusedNamingThem) {
  EXPECT_TRUE(
      atl::ray_addresses_distinct("127.0.1.1", {{"w-0", "127.0.0.2"}, {"w-1", "127.0.0.3"}}).ok());
  auto shared = atl::ray_addresses_distinct("10.0.0.1", {{"w-0", "10.0.0.2"}, {"w-1", "10.0.0.2"}});
  ASSERT_FALSE(shared.ok());
  EXPECT_EQ(shared.error(),
            "ray mode: pod w-0 and pod w-1 share the address 10.0.0.2: Ray needs an address per "
            "node (run each pod in its own network namespace, or give each its own with "
            "workernode --advertise)");
  auto with_head = atl::ray_addresses_distinct("10.0.0.1", {{"w-0", "10.0.0.1"}});
  ASSERT_FALSE(with_head.ok());
  EXPECT_NE(with_head.error().find("Ray's head and pod w-0 share the address 10.0.0.1"),
            std::string::npos);
}

// The probe a Ray worker pod waits with (ray_worker_command): a port that
// takes connections is ready (by address or by name), one that does not is
// not.
TEST(RayCluster, AtlGuardsTcpProbeSaysWhetherThePortTakesConnections) {
  const std::string guard = atl::os::executable_dir() + "/atl-guard";
  auto listening = atl::os::ProbeListener::open("127.0.0.1");
  ASSERT_TRUE(listening.ok()) << listening.error();
  const std::string port = std::to_string(listening->port());
  auto ask = [&](const std::string& host, const std::string& p) {
    auto run = atl::os::run_capture({guard, "--tcp-ready", host, p}, 10s);
    EXPECT_TRUE(run.ok()) << run.error();
    return run.ok() && run->status ? run->status->code : -1;
  };
  EXPECT_EQ(ask("127.0.0.1", port), 0);
  EXPECT_EQ(ask("localhost", port), 0);
  { auto gone = std::move(*listening); }
  EXPECT_EQ(ask("127.0.0.1", port), 1);
}
