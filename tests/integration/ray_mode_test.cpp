// Ray mode with a real Ray (2.60 from PyPI, in a virtualenv made once per
// build directory): a head and two workers, each in a network namespace of
// its own (Ray wants one address per node). Skipped, saying why, where Ray
// cannot be installed or namespaces cannot be made.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "atl/core/ray_cluster.hpp"
#include "netns_hosts.hpp"
#include "test_cluster.hpp"

namespace atl::test {
namespace {

// The virtualenv with Ray; made on first use (pip, under a lock: tests may
// run in parallel). Empty, with the reason, when it cannot be made.
std::string ray_venv(std::string& why_not) {
  const std::string dir = std::string(ATL_BIN_DIR) + "/../ray-venv";
  // Made with Ray Tune's extras; the marker says the install completed.
  const std::string marker = dir + "/.atl-ray-2.60-tune";
  if (::access(marker.c_str(), F_OK) == 0) return dir;
  std::string make = "flock " + dir + ".lock sh -c '[ -e " + marker + " ] || { { [ -x " + dir +
                     "/bin/pip ] || python3 -m venv " + dir + "; } && " + dir +
                     "/bin/pip install -q \"ray[default,tune]==2.60.0\" && touch " + marker +
                     "; }' > " + dir + ".log 2>&1";
  if (std::system(make.c_str()) != 0 || ::access(marker.c_str(), F_OK) != 0) {
    why_not = "Ray could not be installed from PyPI (see " + dir + ".log)";
    return "";
  }
  return dir;
}

// Processes of this cluster whose command line has `needle` and whose
// environment has `env` (e.g. a pod's raylet).
std::vector<int> find_processes(const std::string& needle, const std::string& env) {
  std::vector<int> pids;
  DIR* proc = ::opendir("/proc");
  while (dirent* e = proc ? ::readdir(proc) : nullptr) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::string cmd = read_file("/proc/" + std::to_string(pid) + "/cmdline");
    std::string environ = read_file("/proc/" + std::to_string(pid) + "/environ");
    if (cmd.find(needle) != std::string::npos && environ.find(env) != std::string::npos)
      pids.push_back(pid);
  }
  if (proc) ::closedir(proc);
  return pids;
}

// Every Ray node's temp dir of the job (sessions, sockets, logs) is gone.
bool temp_dirs_gone(const std::string& job_id, int ray_port = atl::JobSpec{}.ray_port) {
  for (const char* node : {"h", "w0", "w1"})
    if (::access(atl::ray_temp_dir(job_id, node, ray_port).c_str(), F_OK) == 0) return false;
  return true;
}

// The GCS port a one-host ray job took for its own ("Ray's GCS at HOST:PORT").
int gcs_port_in(const std::string& out) {
  const auto at = out.find("Ray's GCS at ");
  if (at == std::string::npos) return -1;
  const auto colon = out.find(':', at + 13);
  return std::atoi(out.c_str() + colon + 1);
}

struct RayCluster {
  Hosts hosts{3};
  std::string venv;
  std::string why_not;
  TestCluster c;
  Started* head = nullptr;
  std::string address;              // the head's HOST:PORT
  std::vector<std::string> extras;  // more of the pods' environment ("K=V")

  RayCluster() {
    if (!hosts.why_not().empty()) {
      why_not = hosts.why_not();
      return;
    }
    venv = ray_venv(why_not);
  }

  std::vector<std::string> env() const {
    std::string path = "PATH=" + venv + "/bin";
    for (const auto& e : c.environment())
      if (e.rfind("PATH=", 0) == 0) path += ":" + e.substr(5);
    std::vector<std::string> out = {path, "RAY_DISABLE_USAGE_STATS=1"};
    out.insert(out.end(), extras.begin(), extras.end());
    return out;
  }

  // Starts the head (ray mode, the example's spec) and two workers.
  void start(const std::string& entrypoint, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {bin("headnode"),
                                     "--port",
                                     "0",
                                     "--job-id",
                                     c.job_id(),
                                     "--state-dir",
                                     c.state_dir(),
                                     "--bind",
                                     hosts.address(0),
                                     "--job",
                                     std::string(ATL_SOURCE_DIR) + "/examples/ray/job.json",
                                     "--ray-bin",
                                     venv + "/bin/ray"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--", entrypoint});
    head = &c.start("headnode", concat(hosts.on(0), argv), env());
    ASSERT_TRUE(c.wait_for_output(*head, "listening on ")) << c.output(*head);
    std::string out = c.output(*head);
    auto at = out.find("listening on ") + 13;
    address = out.substr(at, out.find('\n', at) - at);
    for (int w = 0; w < 2; ++w) start_worker(w);
  }

  // Worker pod w on its host (again, as Kubernetes recreates a deleted pod).
  Started& start_worker(int w) {
    return c.start(
        "worker" + std::to_string(w),
        concat(hosts.on(w + 1),
               {bin("workernode"), "--head", address, "--name", c.worker_name(w), "--node",
                "host-" + std::to_string(w + 1), "--cpus", "1", "--memory", "2Gi"}),
        env());
  }
};

const std::string kProgram = "python3 " + std::string(ATL_SOURCE_DIR) + "/examples/ray/program.py";

// One machine, no namespaces: the example job file with two local pods
// (headnode --local-workers 2) running `entrypoint`.
struct OneHostRay {
  std::string why_not;
  std::string venv = ray_venv(why_not);
  TestCluster c;
  Started* head = nullptr;

  void start(const std::string& entrypoint, std::vector<std::string> env = {}) {
    std::string path = "PATH=" + venv + "/bin";
    for (const auto& e : c.environment())
      if (e.rfind("PATH=", 0) == 0) path += ":" + e.substr(5);
    env.insert(env.end(), {path, "RAY_DISABLE_USAGE_STATS=1"});
    head = &c.start_head({"--job", std::string(ATL_SOURCE_DIR) + "/examples/ray/job.json",
                          "--local-workers", "2", "--ray-bin", venv + "/bin/ray", "--", entrypoint},
                         env);
  }
};

// How many of a one-host cluster's nodes (Ray's head 127.0.1.1, the pods
// 127.0.0.2 and .3) the driver's line after `label` names.
int one_host_nodes_named(const std::string& out, const std::string& label) {
  const auto at = out.find(label);
  if (at == std::string::npos) return 0;
  const std::string line = out.substr(at, out.find('\n', at) - at);
  int nodes = 0;
  for (const char* ip : {"127.0.1.1", "127.0.0.2", "127.0.0.3"})
    nodes += line.find(ip) != std::string::npos;
  return nodes;
}

TEST(RayMode, AProgramUsesEveryNodeAndTheJobEndsCleanly) {
  RayCluster r;
  if (!r.why_not.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  r.start(kProgram);
  ASSERT_EQ(r.c.wait_exit(*r.head, 240s), 0) << r.c.output(*r.head);
  std::string out = r.c.output(*r.head);
  EXPECT_NE(out.find("[driver] [atl] Ray cluster ready: 3 nodes"), std::string::npos) << out;
  EXPECT_NE(out.find("[driver] nodes alive: 3"), std::string::npos) << out;
  // STRICT_SPREAD: two bundles on two different nodes (the program checks).
  EXPECT_NE(out.find("[driver] tasks ran on: "), std::string::npos) << out;
  EXPECT_NE(out.find("[driver] RAY PROGRAM OK"), std::string::npos) << out;
  // Every Ray process of the job (raylets, GCS, workers) is gone, and so are
  // the nodes' temp dirs.
  EXPECT_TRUE(r.c.no_strays_within(60s)) << r.c.live_tagged_processes().size() << " left";
  EXPECT_TRUE(temp_dirs_gone(r.c.job_id()));
}

// Every Ray process of the job authenticates with the job's own token
// (<state-dir>/ray-token, RAY_AUTH_MODE=token): a stray token file in $HOME
// changes nothing, and a Ray client from outside the job is refused unless
// it holds that token.
TEST(RayMode, OnlyAClientWithTheJobsRayTokenGetsIn) {
  RayCluster r;
  if (!r.why_not.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  const std::string home = r.c.dir() + "/home";
  ASSERT_EQ(std::system(
                ("mkdir -p " + home + "/.ray && echo garbage-token > " + home + "/.ray/auth_token")
                    .c_str()),
            0);
  r.extras = {"HOME=" + home};
  r.start(kProgram + " && echo PROGRAM DONE && exec sleep 600");
  ASSERT_TRUE(r.c.wait_for_output(*r.head, "[driver] PROGRAM DONE", 240s)) << r.c.output(*r.head);
  EXPECT_NE(r.c.output(*r.head).find("[driver] RAY PROGRAM OK"), std::string::npos);
  const std::string token = read_file(r.c.state_dir() + "/ray-token");
  ASSERT_GT(token.size(), 40u);
  auto client = [&](std::vector<std::string> env) {
    const std::string script = "import ray\nray.init(address='" + r.hosts.address(0) +
                               ":6379', logging_level='ERROR')\nprint('CONNECTED', flush=True)\n";
    auto base = r.env();
    base.insert(base.end(), env.begin(), env.end());
    auto& p =
        r.c.start("client", concat(r.hosts.on(0), {r.venv + "/bin/python", "-c", script}), base);
    const int code = r.c.wait_exit(p, 120s);
    return std::make_pair(code, r.c.output(p));
  };
  auto none = client({"HOME=" + home});  // Ray's defaults: the stray file, or nothing
  EXPECT_NE(none.first, 0) << none.second;
  EXPECT_EQ(none.second.find("CONNECTED"), std::string::npos) << none.second;
  auto wrong = client({"HOME=" + home, "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN=not-the-token"});
  EXPECT_NE(wrong.first, 0) << wrong.second;
  EXPECT_EQ(wrong.second.find("CONNECTED"), std::string::npos) << wrong.second;
  auto right = client({"HOME=" + home, "RAY_AUTH_MODE=token",
                       "RAY_AUTH_TOKEN=" + token.substr(0, token.find('\n'))});
  EXPECT_EQ(right.first, 0) << right.second;
  EXPECT_NE(right.second.find("CONNECTED"), std::string::npos) << right.second;
  r.head->process->signal(SIGTERM);
  r.c.wait_exit(*r.head, 120s);
  EXPECT_TRUE(r.c.no_strays_within(60s));
}

// Ray's dashboard (whose job API runs any command) listens on the head pod's
// loopback only and wants the job's Ray token; atl's dashboard relays it at
// /ray/ to a logged-in session alone (401 otherwise), and says where.
TEST(RayMode, RaysDashboardIsReachedOnlyThroughAtlsLogin) {
  RayCluster r;
  if (!r.why_not.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  r.start(kProgram + " && echo PROGRAM DONE && exec sleep 600");
  ASSERT_TRUE(r.c.wait_for_output(*r.head, "[driver] PROGRAM DONE", 240s)) << r.c.output(*r.head);
  std::string out = r.c.output(*r.head);
  auto at = out.find("dashboard https://");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string url = out.substr(at + 10, out.find('\n', at) - at - 10);
  const std::string ca = r.c.state_dir() + "/tls/ca.pem";
  std::string token = read_file(r.c.state_dir() + "/dashboard-token");
  token = token.substr(0, token.find('\n'));
  // One request from pod `host`'s network namespace.
  auto probe = [&](int host, std::vector<std::string> args) {
    std::vector<std::string> argv = {
        "/usr/bin/python3", std::string(ATL_SOURCE_DIR) + "/tests/integration/http_probe.py"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto& p = r.c.start("probe", concat(r.hosts.on(host), argv));
    EXPECT_EQ(r.c.wait_exit(p, 90s), 0);
    std::string text = r.c.output(p);  // the probe's answer is its last line
    while (!text.empty() && text.back() == '\n') text.pop_back();
    auto j = nlohmann::json::parse(text.substr(text.rfind('\n') + 1), nullptr, false);
    EXPECT_TRUE(j.is_object()) << text;
    return j.is_object() ? j : nlohmann::json::object();
  };
  // From a worker pod, Ray's dashboard port on the head's address is closed.
  auto outside = probe(1, {"http://" + r.hosts.address(0) + ":8265/api/version"});
  EXPECT_TRUE(outside.contains("error")) << outside.dump();
  // In the head pod, Ray itself wants the job's token.
  auto bare = probe(0, {"http://127.0.0.1:8265/api/jobs/"});
  EXPECT_EQ(bare.value("status", 0), 401) << bare.dump();
  // Through atl's dashboard, without a session: refused, with the login form.
  auto page = probe(1, {url + "/ray/", "--ca", ca});
  EXPECT_EQ(page.value("status", 0), 401) << page.dump();
  EXPECT_NE(page.value("body", "").find(R"(name="next" value="/ray/")"), std::string::npos);
  auto jobs = probe(1, {url + "/ray/api/jobs/", "--ca", ca});
  EXPECT_EQ(jobs.value("status", 0), 401) << jobs.dump();
  // The login comes back to Ray's dashboard, which then answers as Ray.
  auto login = probe(1, {url + "/login", "--ca", ca, "--method", "POST", "--form",
                         "token=" + token + "&next=/ray/"});
  EXPECT_EQ(login.value("status", 0), 303) << login.dump();
  EXPECT_EQ(login.value("location", ""), "/ray/") << login.dump();
  const std::string set_cookie = login.value("set_cookie", "");
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  ASSERT_EQ(cookie.rfind("atl_session=", 0), 0u) << login.dump();
  page = probe(1, {url + "/ray/", "--ca", ca, "--cookie", cookie});
  EXPECT_EQ(page.value("status", 0), 200) << page.dump();
  EXPECT_NE(page.value("body", "").find("<title>Ray Dashboard</title>"), std::string::npos);
  auto version = probe(1, {url + "/ray/api/version", "--ca", ca, "--cookie", cookie});
  EXPECT_EQ(version.value("status", 0), 200) << version.dump();
  EXPECT_NE(version.value("body", "").find("2.60.0"), std::string::npos) << version.dump();
  jobs = probe(1, {url + "/ray/api/jobs/", "--ca", ca, "--cookie", cookie});
  EXPECT_EQ(jobs.value("status", 0), 200) << jobs.dump();
  EXPECT_EQ(jobs.value("body", "").rfind("[", 0), 0u) << jobs.dump();
  // Ray's job API acts (it runs commands): not through the dashboard.
  auto submit = probe(1, {url + "/ray/api/jobs/", "--ca", ca, "--cookie", cookie, "--method",
                          "POST", "--form", R"({"entrypoint": "touch /tmp/atl-pwned"})"});
  EXPECT_EQ(submit.value("status", 0), 405) << submit.dump();
  EXPECT_NE(submit.value("body", "").find("read-only"), std::string::npos) << submit.dump();
  // atlctl dashboard-url: the login link, and the one that lands on Ray's.
  auto link = r.c.atlctl({"--address", r.address, "dashboard-url"});
  EXPECT_EQ(link.exit_code, 0) << link.output;
  EXPECT_NE(link.output.find("Ray's dashboard: " + url + "/login?token="), std::string::npos)
      << link.output;
  EXPECT_NE(link.output.find("&next=/ray/"), std::string::npos) << link.output;
  r.head->process->signal(SIGTERM);
  r.c.wait_exit(*r.head, 120s);
  EXPECT_TRUE(r.c.no_strays_within(60s));
}

// One machine, no namespaces: headnode --local-workers gives each local pod
// a loopback address of its own (127.0.0.2, .3) and Ray's head 127.0.1.1
// (Ray replaces 127.0.0.1 with the machine's address), and the pods offer
// the job's spec: the example job file runs as written.
TEST(RayMode, OnOneHostTheExampleJobRunsAsWritten) {
  OneHostRay r;
  if (r.venv.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  // A stray token of an earlier ray.init() in $HOME changes nothing.
  const std::string home = r.c.dir() + "/home";
  ASSERT_EQ(std::system(
                ("mkdir -p " + home + "/.ray && echo garbage-token > " + home + "/.ray/auth_token")
                    .c_str()),
            0);
  r.start(kProgram, {"HOME=" + home});
  ASSERT_EQ(r.c.wait_exit(*r.head, 300s), 0) << r.c.output(*r.head);
  const std::string out = r.c.output(*r.head);
  EXPECT_NE(out.find("[driver] [atl] Ray cluster ready: 3 nodes"), std::string::npos) << out;
  // STRICT_SPREAD: two bundles on two of the three nodes, each at its own
  // loopback address.
  EXPECT_EQ(one_host_nodes_named(out, "[driver] tasks ran on: "), 2) << out;
  EXPECT_NE(out.find("[driver] RAY PROGRAM OK"), std::string::npos) << out;
  EXPECT_TRUE(r.c.no_strays_within(60s)) << r.c.live_tagged_processes().size() << " left";
  // Ports of its own: not Ray's 6379, which a job beside it would want too.
  const int gcs = gcs_port_in(out);
  ASSERT_GT(gcs, 0) << out;
  EXPECT_NE(gcs, 6379) << out;
  EXPECT_TRUE(temp_dirs_gone(r.c.job_id(), gcs));
  // A clean end stops Ray's nodes at once, as `ray stop --force` would (only this job's).
  EXPECT_EQ(out.find("outlived its grace period"), std::string::npos) << out;
}

// Two ray jobs on one host at once, each the example as written: both run
// (each its own GCS, client, agent and worker ports, its own temp dirs).
TEST(RayMode, TwoRayJobsOnOneHostBothRun) {
  OneHostRay a, b;
  if (a.venv.empty()) GTEST_SKIP() << "skipped: " << a.why_not;
  a.start(kProgram);
  b.start(kProgram);
  EXPECT_EQ(a.c.wait_exit(*a.head, 400s), 0) << a.c.output(*a.head);
  EXPECT_EQ(b.c.wait_exit(*b.head, 400s), 0) << b.c.output(*b.head);
  for (OneHostRay* r : {&a, &b}) {
    const std::string out = r->c.output(*r->head);
    EXPECT_NE(out.find("[driver] RAY PROGRAM OK"), std::string::npos) << out;
    EXPECT_EQ(out.find("restart 1/"), std::string::npos) << out;
  }
  EXPECT_NE(gcs_port_in(a.c.output(*a.head)), gcs_port_in(b.c.output(*b.head)));
  EXPECT_TRUE(a.c.no_strays_within(60s));
  EXPECT_TRUE(b.c.no_strays_within(60s));
}

// A failing driver ends the job and the head within its grace (10 s) and a
// few seconds, Ray's nodes with it: Ray's 30 s drain on SIGTERM is not
// waited for, nothing is SIGKILLed with a warning.
TEST(RayMode, OnOneHostAFailingDriverEndsTheHeadWithinItsGrace) {
  OneHostRay r;
  if (r.venv.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  r.start(
      "python3 -c 'import ray; ray.init(); print(\"driver here\", flush=True); "
      "raise SystemExit(1)'");
  ASSERT_TRUE(r.c.wait_for_output(*r.head, "Job status:  failed", 300s)) << r.c.output(*r.head);
  const auto failed_at = std::chrono::steady_clock::now();
  EXPECT_EQ(r.c.wait_exit(*r.head, 60s), 1) << r.c.output(*r.head);
  EXPECT_LT(std::chrono::steady_clock::now() - failed_at, 15s) << r.c.output(*r.head);
  const std::string out = r.c.output(*r.head);
  EXPECT_NE(out.find("the Ray driver ended with exit code 1"), std::string::npos) << out;
  EXPECT_EQ(out.find("outlived its grace period"), std::string::npos) << out;
  EXPECT_TRUE(r.c.no_strays_within(60s));
}

// A worker whose `ray start` never returns: the Ray cluster never becomes
// ready. With no restart left the job fails once the ready timeout passed
// (not stays in command with no user code running), naming the pod.
TEST(RayMode, OnOneHostAClusterNeverReadyFailsTheJobNamingThePod) {
  OneHostRay r;
  if (r.venv.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  const std::string ray = r.c.dir() + "/ray";
  {
    std::ofstream script(ray);
    script << "#!/bin/sh\n"
              "case \"$ATL_POD_NAME $1\" in *worker-1\\ start) exec sleep 600;; esac\n"
              "exec "
           << r.venv << "/bin/ray \"$@\"\n";
  }
  ASSERT_EQ(::chmod(ray.c_str(), 0755), 0);
  std::string path = "PATH=" + r.venv + "/bin";
  for (const auto& e : r.c.environment())
    if (e.rfind("PATH=", 0) == 0) path += ":" + e.substr(5);
  auto& head = r.c.start_head({"--job", std::string(ATL_SOURCE_DIR) + "/examples/ray/job.json",
                               "--local-workers", "2", "--ray-bin", ray, "--ray-ready-timeout",
                               "20s", "--max-restarts", "0", "--grace", "3s", "--", "echo never"},
                              {path, "RAY_DISABLE_USAGE_STATS=1"});
  ASSERT_TRUE(r.c.wait_for_output(head, "listening on ")) << r.c.output(head);
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(r.c.wait_for_output(head, "Job status:  failed", 240s)) << r.c.output(head);
  EXPECT_EQ(r.c.wait_exit(head, 60s), 1) << r.c.output(head);
  // Ray's start on one host takes seconds; the wait is 20 s, the grace 3 s.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 120s) << r.c.output(head);
  const std::string out = r.c.output(head);
  // Pod 1 is named (pod 0's Ray may be slow to start on a loaded machine too).
  const auto at = out.find("job failed: Ray cluster not ready after 20s: not alive in Ray: ");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string line = out.substr(at, out.find('\n', at) - at);
  EXPECT_NE(line.find(r.c.worker_name(1)), std::string::npos) << line;
  EXPECT_NE(line.find("; the restart budget is spent (0/0 restarts used)"), std::string::npos)
      << line;
  EXPECT_EQ(out.find("[driver] never"), std::string::npos) << out;
  EXPECT_TRUE(r.c.no_strays_within(60s));
}

// A pod told to go (SIGTERM to its workernode, as Kubernetes evicts) in
// ray mode: a lost pod, so the Ray cluster and the driver start again (one
// restart counted) and the job succeeds; never a failed job.
TEST(RayMode, OnOneHostASigtermedPodRestartsTheClusterAndTheDriver) {
  OneHostRay r;
  if (r.venv.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  const std::string marker = r.c.dir() + "/parked";
  r.start("if [ ! -e " + marker + " ]; then touch " + marker + "; sleep 600; fi; " + kProgram);
  for (int i = 0; i < 3000 && ::access(marker.c_str(), F_OK) != 0; ++i)
    std::this_thread::sleep_for(100ms);
  ASSERT_EQ(::access(marker.c_str(), F_OK), 0) << r.c.output(*r.head);
  // Ray's files are the job user's alone: each node's temp dir is 0700, so
  // another uid (nobody) lists nothing of it and reads none of its logs.
  const int gcs = gcs_port_in(r.c.output(*r.head));
  ASSERT_GT(gcs, 0) << r.c.output(*r.head);
  for (const char* node : {"h", "w0", "w1"}) {
    const std::string dir = atl::ray_temp_dir(r.c.job_id(), node, gcs);
    struct stat st {};
    ASSERT_EQ(::stat(dir.c_str(), &st), 0) << dir;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << dir;
    auto& nobody =
        r.c.start("nobody", {"/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534",
                             "--clear-groups", "/bin/ls", dir + "/r/session_latest/logs"});
    EXPECT_NE(r.c.wait_exit(nobody), 0) << r.c.output(nobody);
  }
  const int pod = r.c.worker_pid(1);
  ASSERT_GT(pod, 0);
  ASSERT_EQ(::kill(pod, SIGTERM), 0);
  EXPECT_EQ(r.c.wait_exit(*r.head, 300s), 0) << r.c.output(*r.head);
  const std::string out = r.c.output(*r.head);
  EXPECT_NE(out.find("job restarting (restart 1/"), std::string::npos) << out;
  EXPECT_NE(out.find("pod " + r.c.worker_name(1) + " was lost: told to go (SIGTERM"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("[driver] RAY PROGRAM OK"), std::string::npos) << out;
  EXPECT_TRUE(r.c.no_strays_within(60s));
}

TEST(RayMode, ADriverThatFailsFailsTheJob) {
  RayCluster r;
  if (!r.why_not.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  r.start("python3 -c 'import ray; ray.init(); print(\"driver here\"); raise SystemExit(1)'",
          {"--linger", "120s"});
  ASSERT_TRUE(r.c.wait_for_output(*r.head, "Job status:  failed", 240s)) << r.c.output(*r.head);
  // atlctl logs: the driver's by default, a pod's Ray node with -r.
  auto driver = r.c.atlctl({"--address", r.address, "logs"});
  EXPECT_NE(driver.output.find("[driver] driver here"), std::string::npos) << driver.output;
  auto node = r.c.atlctl({"--address", r.address, "logs", "-r", "1"});
  EXPECT_NE(node.output.find("[rank 1] "), std::string::npos) << node.output;
  EXPECT_EQ(node.output.find("[driver]"), std::string::npos) << node.output;
  r.head->process->signal(SIGTERM);  // ends the linger
  EXPECT_EQ(r.c.wait_exit(*r.head, 60s), 1) << r.c.output(*r.head);
  EXPECT_NE(r.c.output(*r.head).find("the Ray driver ended with exit code 1"), std::string::npos)
      << r.c.output(*r.head);
  EXPECT_TRUE(r.c.no_strays_within(60s));
}

TEST(RayMode, AKilledRayletRestartsTheClusterAndTheDriver) {
  RayCluster r;
  if (!r.why_not.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  // The first driver to get a ready cluster parks (leaving a marker); the one
  // after the restart runs the program.
  const std::string marker = r.c.dir() + "/parked";
  r.start("if [ ! -e " + marker + " ]; then touch " + marker + "; sleep 600; fi; " + kProgram,
          {"--grace", "5s"});
  for (int i = 0; i < 1800 && ::access(marker.c_str(), F_OK) != 0; ++i)
    std::this_thread::sleep_for(100ms);
  ASSERT_EQ(::access(marker.c_str(), F_OK), 0) << r.c.output(*r.head);
  std::vector<int> raylets;
  for (int i = 0; i < 100 && raylets.empty(); ++i) {
    raylets = find_processes("raylet", "ATL_POD_NAME=" + r.c.worker_name(1));
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_FALSE(raylets.empty()) << "no raylet of " << r.c.worker_name(1);
  for (int pid : raylets) ::kill(pid, SIGKILL);
  EXPECT_EQ(r.c.wait_exit(*r.head, 300s), 0) << r.c.output(*r.head);
  std::string out = r.c.output(*r.head);
  EXPECT_NE(out.find("): Ray on pod " + r.c.worker_name(1) + " ended with"), std::string::npos)
      << out;
  EXPECT_NE(out.find("[driver] RAY PROGRAM OK"), std::string::npos) << out;
  EXPECT_TRUE(r.c.no_strays_within(60s));
}

// atlctl stop ends the driver alone: the Ray cluster stays up (its raylets
// keep running, `logs -p` shows each pod's Ray node); recover starts the
// driver again on that same cluster. A Ray node that dies while the job is
// stopped takes the rest of the cluster down; recover then starts it all.
TEST(RayMode, StopKeepsRayUpAndRecoverRunsTheDriverOnIt) {
  RayCluster r;
  if (!r.why_not.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  // The driver counts its starts in a file: the first two park, the third
  // runs the program.
  const std::string count = r.c.dir() + "/starts";
  r.start("n=$(cat " + count + " 2>/dev/null || echo 0); echo $((n + 1)) > " + count +
              "; if [ $n -lt 2 ]; then exec sleep 600; fi; " + kProgram,
          {"--grace", "5s", "--nproc-per-node", "2"});  // Ray ignores it; check must too
  auto wait_starts = [&](const std::string& n) {
    for (int i = 0; i < 1800 && read_file(count) != n + "\n"; ++i)
      std::this_thread::sleep_for(100ms);
    return read_file(count) == n + "\n";
  };
  ASSERT_TRUE(wait_starts("1")) << r.c.output(*r.head);
  std::vector<int> raylets;
  for (int w = 0; w < 2; ++w) {
    auto found = find_processes("raylet", "ATL_POD_NAME=" + r.c.worker_name(w));
    ASSERT_FALSE(found.empty()) << "no raylet of " << r.c.worker_name(w);
    raylets.insert(raylets.end(), found.begin(), found.end());
  }
  // The Ray head's GCS: the same process serves the recovered driver.
  const auto gcs = find_processes("gcs_server", "ATL_POD_NAME=" + r.c.job_id() + "-head-0");
  ASSERT_EQ(gcs.size(), 1u) << "the head pod's GCS";
  auto stop = r.c.atlctl({"--address", r.address, "stop"});
  ASSERT_EQ(stop.exit_code, 0) << stop.output;
  auto status = r.c.atlctl({"--address", r.address, "status"});
  EXPECT_NE(status.output.find("Job status:  debugStop"), std::string::npos) << status.output;
  for (int pid : raylets) EXPECT_EQ(::kill(pid, 0), 0) << "raylet " << pid << " was stopped";
  // Each pod's Ray output: the workers' Ray nodes, the head's Ray head and driver.
  auto pod = r.c.atlctl({"--address", r.address, "logs", "-p", r.c.worker_name(1)});
  EXPECT_EQ(pod.exit_code, 0) << pod.output;
  EXPECT_NE(pod.output.find("[rank 1] "), std::string::npos) << pod.output;
  auto head = r.c.atlctl({"--address", r.address, "logs", "-p", r.c.job_id() + "-head-0"});
  EXPECT_NE(head.output.find("[ray-head] "), std::string::npos) << head.output;
  EXPECT_NE(head.output.find("[driver] [atl] Ray cluster ready: 3 nodes"), std::string::npos)
      << head.output;
  // A debug command on worker 0's pod looks at Ray with the node's own
  // environment (its token too) and leaves the node alone: its temp dir was
  // removed when such a command ended, and the recovered driver failed.
  auto ray_status = r.c.atlctl({"--address", r.address, "run", "-r", "0",
                                "ray status --address " + r.hosts.address(0) + ":6379"});
  EXPECT_EQ(ray_status.exit_code, 0) << ray_status.output;
  EXPECT_NE(ray_status.output.find("Active:"), std::string::npos) << ray_status.output;
  ASSERT_EQ(r.c.atlctl({"--address", r.address, "stop"}).exit_code, 0);  // ends debugCommand
  EXPECT_EQ(::access(atl::ray_temp_dir(r.c.job_id(), "w0").c_str(), F_OK), 0)
      << "worker 0's Ray temp dir was removed by a debug command";
  // atlctl check runs on the pods beside their Ray nodes (one per pod).
  auto check = r.c.atlctl({"--address", r.address, "check"});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  for (int w = 0; w < 2; ++w)
    EXPECT_NE(check.output.find(r.c.worker_name(w) + ": allreduce over 2 nodes"), std::string::npos)
        << check.output;
  ASSERT_EQ(r.c.atlctl({"--address", r.address, "stop"}).exit_code, 0);  // ends debugCommand
  auto recover = r.c.atlctl({"--address", r.address, "recover"});
  ASSERT_EQ(recover.exit_code, 0) << recover.output;
  ASSERT_TRUE(wait_starts("2")) << r.c.output(*r.head);
  for (int pid : raylets) EXPECT_EQ(::kill(pid, 0), 0) << "raylet " << pid << " was restarted";
  EXPECT_EQ(find_processes("gcs_server", "ATL_POD_NAME=" + r.c.job_id() + "-head-0"), gcs)
      << "the recovered driver runs on another Ray cluster";

  // Parked again, a raylet dies: the rest of the cluster is stopped.
  ASSERT_EQ(r.c.atlctl({"--address", r.address, "stop"}).exit_code, 0);
  for (int pid : find_processes("raylet", "ATL_POD_NAME=" + r.c.worker_name(1)))
    ::kill(pid, SIGKILL);
  ASSERT_TRUE(
      r.c.wait_for_output(*r.head, "while the job was stopped: the rest of the Ray cluster", 120s))
      << r.c.output(*r.head);
  // Recover waits for the teardown, then starts Ray and the driver anew.
  int code = 3;
  for (int i = 0; i < 120 && code == 3; ++i) {
    auto again = r.c.atlctl({"--address", r.address, "recover"});
    code = again.exit_code;
    if (code == 3) {
      EXPECT_NE(again.output.find("still stopping"), std::string::npos) << again.output;
      std::this_thread::sleep_for(500ms);
    }
  }
  ASSERT_EQ(code, 0);
  EXPECT_EQ(r.c.wait_exit(*r.head, 240s), 0) << r.c.output(*r.head);
  std::string out = r.c.output(*r.head);
  EXPECT_NE(out.find("[driver] RAY PROGRAM OK"), std::string::npos) << out;
  EXPECT_EQ(out.find("job restarted"), std::string::npos) << out;  // debug never counts
  for (int pid : raylets) EXPECT_NE(::kill(pid, 0), 0) << "raylet " << pid << " outlived recover";
  EXPECT_TRUE(r.c.no_strays_within(60s));
  EXPECT_TRUE(temp_dirs_gone(r.c.job_id()));
}

// The guide's "debug, then delete": the pod comes back and the whole job
// starts again by itself (Ray's cluster and the driver), at no cost.
TEST(RayMode, DeleteAfterDebugStartsRayAndTheDriverAgainForFree) {
  RayCluster r;
  if (!r.why_not.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  const std::string count = r.c.dir() + "/starts";
  r.start("n=$(cat " + count + " 2>/dev/null || echo 0); echo $((n + 1)) > " + count +
              "; if [ $n -lt 1 ]; then exec sleep 600; fi; " + kProgram,
          {"--grace", "5s"});
  for (int i = 0; i < 1800 && read_file(count) != "1\n"; ++i) std::this_thread::sleep_for(100ms);
  ASSERT_EQ(read_file(count), "1\n") << r.c.output(*r.head);
  auto debug = r.c.atlctl({"--address", r.address, "debug"});
  ASSERT_EQ(debug.exit_code, 0) << debug.output;
  auto del = r.c.atlctl({"--address", r.address, "delete", "-p", r.c.worker_name(1)});
  ASSERT_EQ(del.exit_code, 0) << del.output;
  ASSERT_TRUE(r.c.wait_for_output(*r.head, "from debugStop: no restart used, 0/", 60s))
      << r.c.output(*r.head);
  // The deleted pod ends (exit 4) and is recreated, as Kubernetes would.
  for (int i = 0; i < 600 && r.c.worker_pid(1) > 0; ++i) std::this_thread::sleep_for(100ms);
  r.start_worker(1);
  EXPECT_EQ(r.c.wait_exit(*r.head, 300s), 0) << r.c.output(*r.head);
  std::string out = r.c.output(*r.head);
  EXPECT_NE(out.find("job restarted: attempt 2 (restart 0/"), std::string::npos) << out;
  EXPECT_NE(out.find("[driver] RAY PROGRAM OK"), std::string::npos) << out;
  EXPECT_TRUE(r.c.no_strays_within(60s));
}

// A Ray Tune search (ray[tune], a synthetic objective): 4 trials, one CPU
// each, side by side on every node of the cluster, workers included.
TEST(RayMode, ARayTuneSearchRunsItsTrialsOnTheWorkers) {
  RayCluster r;
  if (!r.why_not.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  r.start("TUNE_STORAGE=" + r.c.dir() + "/tune python3 " + std::string(ATL_SOURCE_DIR) +
          "/examples/ray/tune_search.py");
  ASSERT_EQ(r.c.wait_exit(*r.head, 300s), 0) << r.c.output(*r.head);
  std::string out = r.c.output(*r.head);
  EXPECT_NE(out.find("[driver] trials finished: 4 of 4"), std::string::npos) << out;
  EXPECT_NE(out.find("[driver] best x: 3"), std::string::npos) << out;
  auto at = out.find("[driver] trials ran on: ");
  ASSERT_NE(at, std::string::npos) << out;
  std::string nodes = out.substr(at, out.find('\n', at) - at);
  EXPECT_NE(nodes.find(r.hosts.address(1)), std::string::npos) << nodes;
  EXPECT_NE(nodes.find(r.hosts.address(2)), std::string::npos) << nodes;
  EXPECT_NE(out.find("[driver] TUNE SEARCH OK"), std::string::npos) << out;
  EXPECT_TRUE(r.c.no_strays_within(60s));
  EXPECT_TRUE(temp_dirs_gone(r.c.job_id()));
}

// The Tune search on one machine (headnode --local-workers, no namespaces):
// its trials spread over the nodes at their own loopback addresses.
TEST(RayMode, OnOneHostARayTuneSearchRunsItsTrials) {
  OneHostRay r;
  if (r.venv.empty()) GTEST_SKIP() << "skipped: " << r.why_not;
  r.start("TUNE_STORAGE=" + r.c.dir() + "/tune python3 " + std::string(ATL_SOURCE_DIR) +
          "/examples/ray/tune_search.py");
  ASSERT_EQ(r.c.wait_exit(*r.head, 300s), 0) << r.c.output(*r.head);
  const std::string out = r.c.output(*r.head);
  EXPECT_NE(out.find("[driver] trials finished: 4 of 4"), std::string::npos) << out;
  EXPECT_GE(one_host_nodes_named(out, "[driver] trials ran on: "), 2) << out;
  EXPECT_NE(out.find("[driver] TUNE SEARCH OK"), std::string::npos) << out;
  EXPECT_TRUE(r.c.no_strays_within(60s)) << r.c.live_tagged_processes().size() << " left";
  EXPECT_TRUE(temp_dirs_gone(r.c.job_id(), gcs_port_in(r.c.output(*r.head))));
}

}  // namespace
}  // namespace atl::test
