// The hang watch on real processes: a rank stopped while its peers make no
// progress is found within the timeout and a few samples, named, its node
// tainted, and the job runs again on the spare; ranks that compute without
// printing are suspect but never restarted; bad settings are refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/free_ports.hpp"
#include "test_cluster.hpp"

namespace atl::test {
namespace {

nlohmann::json status_json(TestCluster& c) {
  auto r = c.atlctl({"--address", c.head_address(), "status", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output, nullptr, false);
}

// Polls `atlctl events` until `text` appears.
bool wait_for_event(TestCluster& c, const std::string& text, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (c.atlctl({"--address", c.head_address(), "events"}).output.find(text) != std::string::npos)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

TEST(HangWatchJobs, AStoppedRankIsNamedItsNodeTaintedAndTheJobRunsOnTheSpare) {
  TestCluster c;
  // Attempt 1: rank 1 stops itself (SIGSTOP) after its first line; the
  // others print once and then wait, as peers of a collective do. Attempt 2
  // (on the spare) just runs.
  const std::string entrypoint =
      "echo \"up rank=$RANK restart=$ATL_RESTART_COUNT\"; "
      "if [ \"$ATL_RESTART_COUNT\" = 0 ] && [ \"$RANK\" = 1 ]; then kill -STOP $$; fi; "
      "sleep 300";
  auto& head = c.start_head({"--workers", "3", "--spare-workers", "1", "--local-workers", "4",
                             "--hang-timeout", "3s", "--grace", "120s", "--", entrypoint});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 2] up rank=2 restart=0")) << c.output(head);
  ASSERT_TRUE(c.wait_for_output(head, "job hung: rank 1 stopped (T)", std::chrono::seconds(60)))
      << c.output(head);
  EXPECT_NE(c.output(head).find("job hung: rank 1 stopped (T) while the other 2 ranks made no "
                                "progress for 3 s"),
            std::string::npos)
      << c.output(head);
  // The stopped rank is continued with its SIGTERM: the restart does not
  // wait out the grace (120 s here) for it.
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] up rank=1 restart=1", std::chrono::seconds(60)))
      << c.output(head);
  auto info = status_json(c);
  EXPECT_EQ(info["state"], "command") << info.dump();
  EXPECT_EQ(info["restarts"], 1) << info.dump();
  ASSERT_EQ(info["taints"].size(), 1u) << info.dump();
  EXPECT_EQ(info["taints"][0]["node"], "local-1") << info.dump();
  EXPECT_EQ(info["taints"][0]["source"], "platform") << info.dump();
  for (const auto& r : info["ranks"]) EXPECT_NE(r["pod"], c.worker_name(1)) << info.dump();
  auto events = c.atlctl({"--address", c.head_address(), "events"});
  EXPECT_NE(events.output.find("job hung: rank 1 stopped (T)"), std::string::npos) << events.output;
  EXPECT_NE(events.output.find("node local-1 tainted by the platform: hung: rank 1 stopped (T)"),
            std::string::npos)
      << events.output;
  EXPECT_NE(events.output.find("job restarting (restart 1/10): job hung: rank 1 stopped (T)"),
            std::string::npos)
      << events.output;
  std::cout << events.output;
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

// The directory with py-spy for Python stacks, as a pod's image would have
// it: the Ray venv's (Ray brings py-spy) or a small venv of its own, made
// once per build directory from PyPI under a lock (tests run in parallel).
// Empty, with the reason, when neither can be had.
std::string py_spy_dir(std::string& why_not) {
  // The Ray venv once complete (ray_mode_test's marker): never half-installed.
  if (::access(bin("../ray-venv/.atl-ray-2.60-tune").c_str(), F_OK) == 0 &&
      ::access(bin("../ray-venv/bin/py-spy").c_str(), X_OK) == 0)
    return bin("../ray-venv/bin");
  const std::string dir = bin("../py-spy-venv");
  const std::string marker = dir + "/.atl-py-spy";
  if (::access(marker.c_str(), F_OK) != 0) {
    const std::string make = "flock " + dir + ".lock sh -c '[ -e " + marker + " ] || { { [ -x " +
                             dir + "/bin/pip ] || /usr/bin/python3 -m venv " + dir + "; } && " +
                             dir + "/bin/pip install -q py-spy && touch " + marker + "; }' > " +
                             dir + ".log 2>&1";
    if (std::system(make.c_str()) != 0 || ::access(marker.c_str(), F_OK) != 0) {
      why_not = "py-spy could not be installed from PyPI (see " + dir + ".log)";
      return "";
    }
  }
  return dir + "/bin";
}

// The cluster's PATH with py-spy on it ("PATH=..."), or empty (why_not says why).
std::string path_with_py_spy(const TestCluster& c, std::string& why_not) {
  const std::string dir = py_spy_dir(why_not);
  if (dir.empty()) return {};
  for (const auto& e : c.environment())
    if (e.rfind("PATH=", 0) == 0) return e + ":" + dir;
  return "PATH=/usr/local/bin:/usr/bin:/bin:" + dir;
}

TEST(HangWatchJobs, ARankAsleepInItsStepWhilePeersWaitIsNamedByItsStack) {
  TestCluster c;
  std::string why_not;
  const std::string path = path_with_py_spy(c, why_not);
  if (path.empty()) GTEST_SKIP() << "skipped: " << why_not;
  // Ranks 0 and 2 wait in allreduce(); rank 1 sleeps inside train_step():
  // every rank idle, only the stacks tell them apart. Attempt 2 runs.
  const std::string script =
      "import os, time\n"
      "def allreduce():\n    time.sleep(600)\n"
      "def train_step(rank):\n"
      "    if rank == 1 and os.environ['ATL_RESTART_COUNT'] == '0':\n"
      "        time.sleep(600)\n"
      "    allreduce()\n"
      "print('up', os.environ['RANK'], os.environ['ATL_RESTART_COUNT'], flush=True)\n"
      "train_step(int(os.environ['RANK']))\n";
  const std::string file = c.dir() + "/train.py";
  {
    std::ofstream out(file);
    out << script;
  }
  auto& head = c.start_head({"--workers", "3", "--spare-workers", "1", "--local-workers", "4",
                             "--hang-timeout", "3s", "--", "exec /usr/bin/python3 " + file},
                            {path});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 2] up 2 0")) << c.output(head);
  ASSERT_TRUE(c.wait_for_output(head, "job hung: rank 1 in train_step", std::chrono::seconds(40)))
      << c.output(head);
  EXPECT_NE(
      c.output(head).find(
          "job hung: rank 1 in train_step (train.py) while 2 ranks are in allreduce (train.py)"),
      std::string::npos)
      << c.output(head);
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] up 1 1", std::chrono::seconds(30)))
      << c.output(head);
  auto info = status_json(c);
  ASSERT_EQ(info["taints"].size(), 1u) << info.dump();
  EXPECT_EQ(info["taints"][0]["node"], "local-1") << info.dump();
  auto events = c.atlctl({"--address", c.head_address(), "events"});
  EXPECT_NE(events.output.find("job suspect: no rank made progress"), std::string::npos)
      << events.output;
  EXPECT_NE(events.output.find("stacks of 3 ranks: 2 in allreduce"), std::string::npos)
      << events.output;
  std::cout << events.output;
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

// A real torch DDP job (gloo on CPU): rank 1 gets stuck inside its
// training step at step 20 of the first attempt (`stuck`: the Python lines
// that do it) while ranks 0 and 2 wait for it in backward's allreduce (gloo
// would wait 30 minutes). Found, named alone (`expected`: the hang line,
// when stacks can say it), its node tainted, the job training on the spare.
void torch_rank_stuck(const std::string& stuck, bool needs_py_spy, const std::string& expected) {
  if (std::system("/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no torch for /usr/bin/python3";
  TestCluster c;
  std::vector<std::string> env;
  std::string no_py_spy;  // without it gdb's native stacks are the evidence
  if (auto path = path_with_py_spy(c, no_py_spy); !path.empty()) env.push_back(path);
  if (needs_py_spy && env.empty()) GTEST_SKIP() << "skipped: " << no_py_spy;
  const std::string file = c.dir() + "/ddp.py";
  {
    std::ofstream out(file);
    out << "import os, signal, time\n"
           "print('importing', flush=True)\n"
           "import torch, torch.distributed as dist\n"
           "from torch.nn.parallel import DistributedDataParallel as DDP\n"
           "rank = int(os.environ['RANK'])\n"
           "stuck = rank == 1 and os.environ['ATL_RESTART_COUNT'] == '0'\n"
           "def train_step(model, opt, x, step):\n"
           "    if stuck and step == 20:\n"
        << stuck
        << "    loss = model(x).sum()\n"
           "    opt.zero_grad()\n"
           "    loss.backward()\n"
           "    opt.step()\n"
           "dist.init_process_group('gloo')\n"
           "model = DDP(torch.nn.Linear(32, 32))\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
           "x = torch.randn(8, 32)\n"
           "for step in range(10**9):\n"
           "    train_step(model, opt, x, step)\n"
           "    if step % 10 == 0:\n"
           "        print('step', step, flush=True)\n";
  }
  // Its own MASTER_PORT: another torch test may run beside it.
  const std::string port = std::to_string(unused_ports(1).front());
  auto& head = c.start_head(
      {"--workers", "3", "--spare-workers", "1", "--local-workers", "4", "--master-port", port,
       "--hang-timeout", "5s", "--", "exec /usr/bin/python3 " + file},
      env);
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] step 10", std::chrono::seconds(90)))
      << c.output(head);
  // Found after the timeout and two looks at the stacks a second apart (how
  // soon is bench material: timings are not asserted on 2 shared cores).
  ASSERT_TRUE(c.wait_for_output(head, "job hung: rank 1 ", std::chrono::seconds(90)))
      << c.output(head);
  const std::string out = c.output(head);
  const size_t at = out.find("job hung: rank 1 ");
  const std::string line = out.substr(at, out.find('\n', at) - at);
  EXPECT_EQ(line.find("ranks 0"), std::string::npos) << line;  // no other rank named
  EXPECT_EQ(line.find("rank 0 "), std::string::npos) << line;
  EXPECT_EQ(line.find("rank 2 "), std::string::npos) << line;
  if (!env.empty() || needs_py_spy || expected.find("stopped") != std::string::npos) {
    EXPECT_EQ(line, expected);
  }
  // Attempt 2 trains on the spare: every rank makes steps again.
  ASSERT_TRUE(c.wait_for_output(head, "job restarted: attempt 2", std::chrono::seconds(60)))
      << c.output(head);
  const size_t restarted = c.output(head).find("job restarted: attempt 2");
  bool stepping = false;
  for (int i = 0; i < 900 && !stepping; ++i) {
    stepping = c.output(head).find("[rank 1] step 30", restarted) != std::string::npos;
    if (!stepping) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(stepping) << c.output(head);
  auto info = status_json(c);
  ASSERT_EQ(info["taints"].size(), 1u) << info.dump();
  EXPECT_EQ(info["taints"][0]["node"], "local-1") << info.dump();
  EXPECT_EQ(info["restarts"], 1) << info.dump();
  auto events = c.atlctl({"--address", c.head_address(), "events"});
  EXPECT_NE(events.output.find("node local-1 tainted by the platform: hung: rank 1 "),
            std::string::npos)
      << events.output;
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(HangWatchJobs, ATorchDdpRankAsleepInItsStepIsNamedAndTheJobGoesOnOnTheSpare) {
  torch_rank_stuck("        time.sleep(600)\n", false,
                   "job hung: rank 1 in train_step (ddp.py) while 2 ranks are in backward "
                   "(torch/autograd/__init__.py)");
}

TEST(HangWatchJobs, ATorchDdpRankSpinningOutsideTheCollectiveIsNamedByItsStack) {
  // Busy: its CPU time grows, as the waiting peers' may (gloo polls). Only
  // its Python stack stands apart: py-spy is needed (gdb's native frames of
  // a spinning interpreter move between the two looks).
  // It works while its peers wait: judged at the configured timeout, as busy.
  torch_rank_stuck("        while True:\n            pass\n", true,
                   "job hung: rank 1 busy for 5 s in train_step (ddp.py) while 2 ranks are in "
                   "backward (torch/autograd/__init__.py)");
}

TEST(HangWatchJobs, ATorchDdpRankStoppedIsNamedAndTheJobGoesOnOnTheSpare) {
  torch_rank_stuck("        os.kill(os.getpid(), signal.SIGSTOP)\n", false,
                   "job hung: rank 1 stopped (T) while the other 2 ranks made no progress for 5 s");
}

// The shape real jobs have: torch DDP over gloo, each rank with a
// DataLoader(num_workers=2), behind a wrapper, rank 0 alone printing a line
// per step, and no --hang-timeout (the default 5 min; suspect after the
// timeout learned from the steps). `fault` picks what rank 1's first attempt
// does at step 40: "sleep" in its step, "worker" (its loader's workers stuck
// in the dataset), or "none"; "alone" is rank 0 evaluating and then
// checkpointing alone (each ~20 x the step time) while the others wait in
// a barrier.
std::string ddp_with_loader(const std::string& fault) {
  return "import os, sys, time\n"
         "import torch, torch.distributed as dist\n"
         "from torch.nn.parallel import DistributedDataParallel as DDP\n"
         "from torch.utils.data import Dataset, DataLoader\n"
         "FAULT = '" +
         fault +
         "'\n"
         "rank = int(os.environ['RANK'])\n"
         "first = os.environ['ATL_RESTART_COUNT'] == '0'\n"
         "class Data(Dataset):\n"
         "    def __len__(self):\n        return 10**6\n"
         "    def __getitem__(self, i):\n"
         "        if FAULT == 'worker' and rank == 1 and first and i >= 8 * 40:\n"
         "            time.sleep(10**6)\n"
         "        return torch.randn(32)\n"
         "def train_step(model, opt, x, step):\n"
         "    if FAULT == 'sleep' and rank == 1 and first and step == 40:\n"
         "        time.sleep(10**6)\n"
         "    loss = model(x).sum()\n"
         "    opt.zero_grad()\n"
         "    loss.backward()\n"
         "    opt.step()\n"
         "    time.sleep(0.2)\n"
         "def evaluate(model, seconds):\n"
         "    end = time.time() + seconds\n"
         "    with torch.no_grad():\n"
         "        while time.time() < end:\n"
         "            model.module(torch.randn(256, 32))\n"
         "def checkpoint(model, seconds, path):\n"
         "    end = time.time() + seconds\n"
         "    while time.time() < end:\n"
         "        torch.save([model.state_dict(), torch.randn(1 << 20)], path)\n"
         "        os.sync()\n"
         "if __name__ == '__main__':\n"
         "    if not first and rank == 0:\n"
         "        print('resumed after:', os.environ['ATL_LAST_EXIT_REASON'], flush=True)\n"
         "    dist.init_process_group('gloo')\n"
         "    model = DDP(torch.nn.Linear(32, 32))\n"
         "    opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
         "    loader = DataLoader(Data(), batch_size=8, num_workers=2)\n"
         "    for step, x in enumerate(loader):\n"
         "        train_step(model, opt, x, step)\n"
         "        if rank == 0:\n"
         "            print('step', step, flush=True)\n"
         "        if FAULT == 'alone' and step in (30, 60):\n"
         "            if rank == 0:\n"
         "                if step == 30:\n"
         "                    evaluate(model, 20)\n"
         "                else:\n"
         "                    checkpoint(model, 20, os.environ['CKPT'])\n"
         "            dist.barrier()\n"
         "        if step == 80 and FAULT != 'sleep' and FAULT != 'worker':\n"
         "            break\n"
         "        if step == 30 and not first:\n"
         "            break\n"
         "    print('done', rank, flush=True)\n";
}

// A torch DDP job with loader workers whose rank 1 is stuck at step 40 of
// its first attempt, behind `wrapper`: found under the learned timeout,
// named alone as `expected` says, its node tainted, done on the spare.
void ddp_with_loader_stuck(const std::string& fault, const std::string& wrapper,
                           const std::string& expected,
                           const std::string& python = "/usr/bin/python3",
                           const std::string& also = "") {
  if (std::system((python + " -c 'import torch.distributed' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "no torch for " << python;
  TestCluster c;
  std::string why_not;
  const std::string path = path_with_py_spy(c, why_not);
  if (path.empty()) GTEST_SKIP() << "skipped: " << why_not;
  std::ofstream(c.dir() + "/ddp_loader.py") << ddp_with_loader(fault);
  // A launcher script, as torchrun-style launchers run the training script.
  std::ofstream(c.dir() + "/launch.py")
      << "import subprocess, sys\n"
         "sys.exit(subprocess.run([sys.executable, '-m', 'ddp_loader']).returncode)\n";
  const std::string port = std::to_string(unused_ports(1).front());
  const auto started = std::chrono::steady_clock::now();
  auto& head = c.start_head(
      {"--workers", "3", "--spare-workers", "1", "--local-workers", "4", "--master-port", port,
       "--linger", "60s", "--", "cd " + c.dir() + " && " + wrapper},
      {path});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] step 39", std::chrono::seconds(120)))
      << c.output(head);
  const auto fault_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.wait_for_output(head, "job hung: ", std::chrono::seconds(120))) << c.output(head);
  const auto found = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - fault_at);
  const std::string out = c.output(head);
  const size_t at = out.find("job hung: ");
  const std::string line = out.substr(at, out.find('\n', at) - at);
  std::cout << "found in " << found.count() << " ms (" << line << "), the job started "
            << std::chrono::duration_cast<std::chrono::seconds>(fault_at - started).count()
            << " s before\n";
  EXPECT_EQ(line.rfind(expected, 0), 0u) << line;
  EXPECT_NE(line.find(also), std::string::npos) << line;
  ASSERT_TRUE(c.wait_for_output(head, "Job status:  succeeded", std::chrono::seconds(180)))
      << c.output(head);
  // The restarted ranks are told why the last attempt ended.
  EXPECT_NE(c.output(head).find("[rank 0] resumed after: " + line), std::string::npos)
      << c.output(head);
  auto info = status_json(c);
  ASSERT_EQ(info["taints"].size(), 1u) << info.dump();
  EXPECT_EQ(info["taints"][0]["node"], "local-1") << info.dump();
  EXPECT_EQ(info["restarts"], 1) << info.dump();
  // Goodput: the hang cost its detection (the silence before the verdict,
  // ~ the learned 10 s), the restart and the re-warm; the rest trained.
  const auto& g = info["goodput"];
  EXPECT_EQ(g["faults"], 1) << g.dump();
  EXPECT_GE(g["detection_s"].get<double>(), 9.0) << g.dump();
  EXPECT_LE(g["detection_s"].get<double>(), found.count() / 1000.0 + 2) << g.dump();
  EXPECT_GE(g["rewarm_s"].get<double>(), 0.5) << g.dump();  // imports, init, loader workers
  EXPECT_GT(g["productive_s"].get<double>(), 5.0) << g.dump();
  EXPECT_LT(g["ratio"].get<double>(), 1.0) << g.dump();
  EXPECT_EQ(g["recent_faults"][0]["attempt"], 1) << g.dump();
  auto verbose = c.atlctl({"--address", c.head_address(), "status", "-v"});
  EXPECT_NE(verbose.output.find("Goodput: "), std::string::npos) << verbose.output;
  EXPECT_NE(verbose.output.find("; 1 fault cost detection "), std::string::npos) << verbose.output;
  auto events = c.atlctl({"--address", c.head_address(), "events"});
  EXPECT_NE(events.output.find("hang watch: idle ranks suspect after 10s of silence"),
            std::string::npos)
      << events.output;
  EXPECT_NE(events.output.find("evidence: rank 1: "), std::string::npos) << events.output;
  // Looking made no progress: nothing the diagnosis did (py-spy, the flight
  // recorder's dump) wrote to the ranks' output.
  const auto hung_at = events.output.find("job hung: ");
  EXPECT_EQ(events.output.substr(0, hung_at).find("job progressing again"), std::string::npos)
      << events.output;
  std::cout << events.output;
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(HangWatchJobs, ADdpRankWithLoaderWorkersAsleepInItsStepIsNamedUnderTheLearnedTimeout) {
  ddp_with_loader_stuck("sleep", "exec /usr/bin/python3 launch.py",
                        "job hung: rank 1 in train_step (ddp_loader.py) while 2 ranks are in ");
}

TEST(HangWatchJobs, ADdpRanksStuckLoaderWorkerIsNamedAsSuch) {
  ddp_with_loader_stuck("worker", "bash -c '/usr/bin/python3 -m ddp_loader'",
                        "job hung: rank 1's DataLoader worker 0 in Data.__getitem__ "
                        "(ddp_loader.py) while 2 ranks are in ");
}

// The same job in a torch with the flight recorder (2.5 or later; Debian's
// is 1.13, so this runs where ATL_TEST_TORCH_PYTHON names such a python,
// e.g. a venv with torch from PyPI): the verdict says which collective the
// others wait in and that rank 1 never entered it.
std::string flight_recorder_python() {
  const char* python = std::getenv("ATL_TEST_TORCH_PYTHON");
  return python ? python : "";
}
constexpr const char* kNoFlightRecorder =
    "set ATL_TEST_TORCH_PYTHON to a python with torch 2.5 or later";

TEST(HangWatchJobs, AFlightRecordNamesTheCollectiveTheOthersWaitIn) {
  const std::string python = flight_recorder_python();
  if (python.empty()) GTEST_SKIP() << kNoFlightRecorder;
  ddp_with_loader_stuck("sleep", "exec " + python + " launch.py",
                        "job hung: ranks 0,2 wait in all_reduce #", python,
                        " on the default group; rank 1 never entered it; rank 1 in train_step "
                        "(ddp_loader.py)");
}

TEST(HangWatchJobs, AFlightRecordAndTheStacksNameTheLoaderWorkerARankWaitsOn) {
  const std::string python = flight_recorder_python();
  if (python.empty()) GTEST_SKIP() << kNoFlightRecorder;
  ddp_with_loader_stuck("worker", "bash -c '" + python + " -m ddp_loader'",
                        "job hung: ranks 0,2 wait in all_reduce #", python,
                        " on the default group; rank 1 never entered it; rank 1's DataLoader "
                        "worker 0 in Data.__getitem__ (ddp_loader.py)");
}

TEST(HangWatchJobs, RankZeroEvaluatingThenCheckpointingAloneWhileTheOthersWaitIsLeftAlone) {
  if (std::system("/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no torch for /usr/bin/python3";
  TestCluster c;
  std::vector<std::string> env{"CKPT=" + c.dir() + "/ckpt.pt"};
  std::string no_py_spy;  // with py-spy the stacks are taken too, and must not convict
  if (auto path = path_with_py_spy(c, no_py_spy); !path.empty()) env.push_back(path);
  std::ofstream(c.dir() + "/ddp_loader.py") << ddp_with_loader("alone");
  const std::string port = std::to_string(unused_ports(1).front());
  auto& head =
      c.start_head({"--workers", "3", "--local-workers", "3", "--master-port", port, "--linger",
                    "60s", "--", "cd " + c.dir() + " && /usr/bin/python3 -m ddp_loader"},
                   env);
  ASSERT_TRUE(c.wait_for_output(head, "Job status:  succeeded", std::chrono::seconds(240)))
      << c.output(head);
  EXPECT_NE(c.output(head).find("[rank 0] step 80"), std::string::npos) << c.output(head);
  EXPECT_EQ(c.output(head).find("job hung"), std::string::npos) << c.output(head);
  auto events = c.atlctl({"--address", c.head_address(), "events"});
  // The watch had learned the cadence before the silences: they were judged, not unwatched.
  EXPECT_NE(events.output.find("hang watch: idle ranks suspect after 10s of silence"),
            std::string::npos)
      << events.output;
  EXPECT_EQ(events.output.find("job hung"), std::string::npos) << events.output;
  EXPECT_EQ(events.output.find("restarting"), std::string::npos) << events.output;
  EXPECT_EQ(status_json(c)["restarts"], 0);
  std::cout << events.output;
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

// A 5x straggler in a torch DDP job where only rank 0 prints: rank 1
// computes far longer each step while the others wait for it in the
// collective. Marked and said (never restarted for it); with
// --on-straggler taint its node sits out the next attempt.
TEST(HangWatchJobs, AStragglerIsMarkedSaidAndTaintedAtTheNextRestart) {
  if (std::system("/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no torch for /usr/bin/python3";
  TestCluster c;
  std::ofstream(c.dir() + "/straggler.py")
      << "import os, time, torch, torch.distributed as dist\n"
         "from torch.nn.parallel import DistributedDataParallel as DDP\n"
         "rank = int(os.environ['RANK'])\n"
         "slow = rank == 1 and os.environ['ATL_RESTART_COUNT'] == '0'\n"
         "dist.init_process_group('gloo')\n"
         "model = DDP(torch.nn.Linear(32, 32))\n"
         "opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
         "for step in range(10**9):\n"
         "    end = time.time() + (0.25 if slow else 0.05)\n"
         "    while time.time() < end:\n"
         "        sum(range(1000))\n"
         "    loss = model(torch.randn(8, 32)).sum()\n"
         "    opt.zero_grad()\n"
         "    loss.backward()\n"
         "    opt.step()\n"
         "    if rank == 0 and step % 5 == 0:\n"
         "        print('step', step, flush=True)\n";
  const std::string port = std::to_string(unused_ports(1).front());
  // Two spares: one for the deleted pod, one for the straggler's.
  auto& head = c.start_head({"--workers", "3", "--spare-workers", "2", "--local-workers", "5",
                             "--master-port", port, "--on-straggler", "taint", "--",
                             "exec /usr/bin/python3 " + c.dir() + "/straggler.py"});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] step 5", std::chrono::seconds(120)))
      << c.output(head);
  ASSERT_TRUE(wait_for_event(c, "rank 1 is a straggler: CPU ", std::chrono::seconds(120)))
      << c.output(head);
  auto verbose = c.atlctl({"--address", c.head_address(), "status", "-v"});
  EXPECT_NE(verbose.output.find("straggler"), std::string::npos) << verbose.output;
  auto info = status_json(c);
  EXPECT_EQ(info["restarts"], 0) << info.dump();
  std::string slow_pod, other_pod;
  for (const auto& r : info["ranks"]) {
    if (r.value("rank", -1) == 1) slow_pod = r["pod"];
    if (r.value("rank", -1) == 0) other_pod = r["pod"];
  }
  ASSERT_FALSE(slow_pod.empty()) << info.dump();
  // The next restart (a pod deleted, as the guide does): the straggler's
  // node is tainted and the job trains on the spare.
  auto del = c.atlctl({"--address", c.head_address(), "delete", "-p", other_pod});
  ASSERT_EQ(del.exit_code, 0) << del.output;
  ASSERT_TRUE(c.wait_for_output(head, "job restarted: attempt 2", std::chrono::seconds(60)))
      << c.output(head);
  info = status_json(c);
  ASSERT_EQ(info["taints"].size(), 1u) << info.dump();
  EXPECT_EQ(info["taints"][0]["node"], "local-" + std::string(1, slow_pod.back())) << info.dump();
  EXPECT_EQ(info["taints"][0]["reason"].get<std::string>().rfind("rank 1 is a straggler", 0), 0u)
      << info.dump();
  for (const auto& r : info["ranks"]) EXPECT_NE(r["pod"], slow_pod) << info.dump();
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(HangWatchJobs, DiagnoseShowsEveryRanksStackGroupedWithoutStoppingAnything) {
  TestCluster c;
  std::vector<std::string> env;
  std::string no_py_spy;
  const std::string path = path_with_py_spy(c, no_py_spy);
  if (!path.empty()) env.push_back(path);
  const std::string file = c.dir() + "/work.py";
  {
    std::ofstream out(file);
    out << "import os, time\n"
           "def wait_for_peers():\n    time.sleep(600)\n"
           "def load_batch():\n    time.sleep(600)\n"
           "print('up', os.environ['RANK'], flush=True)\n"
           "load_batch() if os.environ['RANK'] == '2' else wait_for_peers()\n";
  }
  auto& head = c.start_head({"--workers", "3", "--local-workers", "3", "--hang-timeout", "0", "--",
                             "exec /usr/bin/python3 " + file},
                            env);
  ASSERT_TRUE(c.wait_for_output(head, "[rank 2] up 2")) << c.output(head);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into their sleeps
  auto d = c.atlctl({"--address", c.head_address(), "diagnose"});
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("Stacks of 3 of 3 ranks, by group:"), std::string::npos) << d.output;
  if (!path.empty()) {
    EXPECT_NE(d.output.find("  ranks 0,1               wait_for_peers (work.py)\n"),
              std::string::npos)
        << d.output;
    EXPECT_NE(d.output.find("  rank 2                  load_batch (work.py)\n"), std::string::npos)
        << d.output;
    EXPECT_NE(d.output.find("Outliers: rank 2 in load_batch (work.py) while 2 ranks are in "
                            "wait_for_peers (work.py)"),
              std::string::npos)
        << d.output;
    // The outlier's pod's GPUs, as its node's watch sees them (no driver here).
    EXPECT_NE(d.output.find(" GPUs: not watched: NVML not available (libnvidia-ml.so.1 cannot "
                            "be loaded)"),
              std::string::npos)
        << d.output;
  }
  auto json = c.atlctl({"--address", c.head_address(), "diagnose", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.output;
  auto j = nlohmann::json::parse(json.output, nullptr, false);
  ASSERT_EQ(j["ranks"].size(), 3u) << json.output;
  for (const auto& r : j["ranks"]) EXPECT_NE(r["tool"], "") << json.output;
  // -r: only those ranks; -o: the whole diagnosis, full stacks, in a file.
  const std::string saved = c.dir() + "/diagnosis.json";
  auto some = c.atlctl({"--address", c.head_address(), "diagnose", "-r", "1-2", "-o", saved});
  ASSERT_EQ(some.exit_code, 0) << some.output;
  EXPECT_NE(some.output.find("Stacks of 2 of 2 ranks, by group:"), std::string::npos)
      << some.output;
  EXPECT_NE(some.output.find("Every rank's whole stack: " + saved), std::string::npos)
      << some.output;
  auto whole = nlohmann::json::parse(read_file(saved), nullptr, false);
  ASSERT_EQ(whole["ranks"].size(), 2u) << read_file(saved);
  EXPECT_EQ(whole["ranks"][0]["rank"], 1) << read_file(saved);
  EXPECT_EQ(whole["ranks"][1]["rank"], 2) << read_file(saved);
  if (!path.empty()) {
    EXPECT_NE(whole["ranks"][1]["stack"].get<std::string>().find("load_batch"), std::string::npos)
        << read_file(saved);
  }
  // Bad input: named, nothing written, an existing file kept as it was.
  std::ofstream(saved) << "kept";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"diagnose", "-r", "7", "-o", saved}, {"diagnose", "-r", "x", "-o", saved}}) {
    std::vector<std::string> full = {"--address", c.head_address()};
    full.insert(full.end(), args.begin(), args.end());
    auto r = c.atlctl(full);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("diagnose: -r: "), std::string::npos) << r.output;
    EXPECT_EQ(read_file(saved), "kept");
  }
  auto unwritable =
      c.atlctl({"--address", c.head_address(), "diagnose", "-o", c.dir() + "/no/such/dir/d.json"});
  EXPECT_EQ(unwritable.exit_code, 2) << unwritable.output;
  EXPECT_NE(unwritable.output.find("diagnose: -o: cannot write " + c.dir() + "/no/such/dir/d.json"),
            std::string::npos)
      << unwritable.output;
  // Nothing was stopped or restarted by looking.
  auto info = status_json(c);
  EXPECT_EQ(info["state"], "command") << info.dump();
  EXPECT_EQ(info["restarts"], 0) << info.dump();
  auto bad = c.atlctl({"--address", c.head_address(), "diagnose", "now"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(HangWatchJobs, RanksThatTouchTheirProgressFileAreNeverSuspect) {
  TestCluster c;
  // Silent ranks that say "progress" the explicit way, as atl.progress() does.
  auto& head = c.start_head({"--workers", "2", "--local-workers", "2", "--hang-timeout", "2s", "--",
                             "echo up; while :; do touch \"$ATL_PROGRESS_FILE\"; sleep 0.3; "
                             "done"});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] up")) << c.output(head);
  std::this_thread::sleep_for(std::chrono::seconds(7));  // three timeouts without a line
  auto events = c.atlctl({"--address", c.head_address(), "events"});
  EXPECT_EQ(events.output.find("job suspect"), std::string::npos) << events.output;
  EXPECT_EQ(status_json(c)["restarts"], 0);
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(HangWatchJobs, RanksCallingAtlProgressFromCAreNeverSuspect) {
  TestCluster c;
  // The C API's way: silent ranks calling atl_progress() for 7 s.
  auto& head = c.start_head({"--workers", "2", "--local-workers", "2", "--hang-timeout", "2s", "--",
                             bin("atl_capi_progress") + " spin 7"});
  ASSERT_TRUE(c.wait_for_output(head, "Job status:  succeeded", std::chrono::seconds(60)))
      << c.output(head);
  auto events = c.atlctl({"--address", c.head_address(), "events"});
  EXPECT_EQ(events.output.find("job suspect"), std::string::npos) << events.output;
  c.wait_exit(head);
  // Outside atl it tells nobody, and says so.
  auto& outside = c.start("outside", {bin("atl_capi_progress"), "outside"}, {"ATL_PROGRESS_FILE="});
  EXPECT_EQ(c.wait_exit(outside), 0) << c.output(outside);
}

TEST(HangWatchJobs, RanksComputingInSilenceAreSuspectButNeverRestarted) {
  TestCluster c;
  // Each rank computes a little every 10 ms and prints nothing after its
  // first line: three timeouts of silence. Three ranks: a look at their
  // stacks catches them at different places (summing, asleep), which the
  // second look must not confirm. "A little" is 0.5 ms of CPU time per
  // round (~5% of a core) whatever the machine's speed: a fixed sum was
  // ~1% of a core on a faster CPU, the watch's own bar for working, and the
  // job was judged hung in 2 of 3 runs there.
  std::vector<std::string> env;
  std::string no_py_spy;  // without it gdb's native stacks are the evidence
  if (auto path = path_with_py_spy(c, no_py_spy); !path.empty()) env.push_back(path);
  auto& head = c.start_head({"--workers", "3", "--local-workers", "3", "--hang-timeout", "2s", "--",
                             "echo up; exec /usr/bin/python3 -c 'import time\nwhile True:\n"
                             "    t = time.process_time()\n"
                             "    while time.process_time() - t < 0.0005: sum(range(1000))\n"
                             "    time.sleep(0.01)'"},
                            env);
  ASSERT_TRUE(c.wait_for_output(head, "[rank 2] up")) << c.output(head);
  ASSERT_TRUE(wait_for_event(c, "job suspect", std::chrono::seconds(20))) << c.output(head);
  std::this_thread::sleep_for(std::chrono::seconds(6));  // three more timeouts of silence
  auto info = status_json(c);
  EXPECT_EQ(info["state"], "command") << info.dump();
  EXPECT_EQ(info["restarts"], 0) << info.dump();
  EXPECT_TRUE(info["taints"].empty()) << info.dump();
  EXPECT_EQ(c.output(head).find("job hung"), std::string::npos) << c.output(head);
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

// Native ranks computing in silence (a shell's busy loop: no Python, so a
// look at their stacks is gdb's attach) are never stopped by the watch's
// looks: gdb ptrace-stopped such ranks 24-44% of the samples, and once the
// watch blamed its own stop. The ranks' states, sampled every 20 ms over
// five suspect periods, never show a stop, and no verdict comes.
TEST(HangWatchJobs, SilentlyComputingNativeRanksAreNeverStoppedByALook) {
  if (std::system("command -v gdb >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no gdb here: nothing would attach either way";
  TestCluster c;
  auto& head = c.start_head({"--workers", "2", "--local-workers", "2", "--hang-timeout", "2s", "--",
                             "echo up; exec /bin/sh -c 'while :; do :; done'"});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] up")) << c.output(head);
  ASSERT_TRUE(wait_for_event(c, "job suspect", std::chrono::seconds(20))) << c.output(head);
  // The ranks: the busy shells under this cluster's guards.
  std::vector<int> ranks;
  for (int i = 0; i < 100 && ranks.size() < 2; ++i) {
    ranks.clear();
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string name = entry.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const std::string cmd = read_file(entry.path().string() + "/cmdline");
      if (cmd.find("while :; do :; done") != std::string::npos &&
          read_file(entry.path().string() + "/environ").find(c.job_id()) != std::string::npos)
        ranks.push_back(std::stoi(name));
    }
    if (ranks.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(ranks.size(), 2u);
  int samples = 0, stopped = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {  // a window of looks, sampled
    for (int pid : ranks) {
      const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
      const auto close = stat.rfind(')');
      if (close == std::string::npos || close + 2 >= stat.size()) continue;
      ++samples;
      const char state = stat[close + 2];
      stopped += state == 't' || state == 'T';
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GT(samples, 500);
  EXPECT_EQ(stopped, 0) << "of " << samples << " samples of the ranks' states";
  auto events = c.atlctl({"--address", c.head_address(), "events"});
  EXPECT_NE(events.output.find("job suspect"), std::string::npos) << events.output;
  EXPECT_EQ(c.output(head).find("job hung"), std::string::npos) << c.output(head);
  EXPECT_EQ(status_json(c)["restarts"], 0);
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

// A diagnosis keeps what each rank's flight-recorder hook answered (its raw
// dumps, as torch's tools read them) in the attempt's log dir: they were
// only condensed into the verdict and lost with the rank's $TMPDIR.
TEST(HangWatchJobs, ADiagnosisKeepsEachRanksRawFlightRecordInTheAttemptsLogDir) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "2", "--local-workers", "2", "--max-restarts", "0", "--",
                             "exec /usr/bin/python3 -c 'import time\n"
                             "for i in range(20):\n    print(\"step\", i, flush=True)\n"
                             "    time.sleep(0.2)\n"
                             "time.sleep(600)'"});
  ASSERT_TRUE(c.wait_for_output(head, "job hung", std::chrono::seconds(90))) << c.output(head);
  ASSERT_TRUE(c.wait_for_output(head, "Job status:  failed", std::chrono::seconds(30)))
      << c.output(head);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string path =
        c.state_dir() + "/logs/attempt-1/rank-" + std::to_string(rank) + ".flight-record.json";
    auto record = nlohmann::json::parse(read_file(path), nullptr, false);
    ASSERT_TRUE(record.is_object()) << path << ": " << read_file(path);
    EXPECT_TRUE(record["pid"].is_number()) << record.dump();
    EXPECT_TRUE(record.contains("dumps")) << record.dump();
  }
}

// gdb stops the process it attaches to, for as long as it takes (seconds
// on a big native binary). A diagnosis's own stop is no verdict: here a
// gdb that holds its target stopped 4.5 s (the hold that makes "stopped"
// a verdict is 3 s at --hang-timeout 6s) while the other rank idles.
TEST(HangWatchJobs, ADiagnosisOwnStopOfARankIsNeverTakenForAHang) {
  TestCluster c;
  const std::string tools = c.dir() + "/tools";
  std::filesystem::create_directories(tools);
  {
    std::ofstream gdb(tools + "/gdb");
    gdb << "#!/bin/sh\n"
           "while [ $# -gt 0 ]; do [ \"$1\" = -p ] && pid=$2; shift; done\n"
           "kill -STOP $pid; sleep 4.5; kill -CONT $pid\n"
           "echo 'Thread 1 (Thread 0x7f (LWP '$pid') \"sleep\"):'\n"
           "echo '#0  0x00007f in clock_nanosleep () from /lib/libc.so.6'\n";
  }
  std::filesystem::permissions(tools + "/gdb", std::filesystem::perms::owner_all);
  std::string path = "PATH=" + tools;
  for (const auto& e : c.environment())
    if (e.rfind("PATH=", 0) == 0) path += ":" + e.substr(5);
  auto& head = c.start_head({"--workers", "2", "--local-workers", "2", "--hang-timeout", "6s", "--",
                             "echo up; exec sleep 600"},
                            {path});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] up")) << c.output(head);
  // Silent past the timeout first: a stop now would be judged at once.
  std::this_thread::sleep_for(std::chrono::seconds(8));
  auto d = c.atlctl({"--address", c.head_address(), "diagnose", "-r", "0"});
  EXPECT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("clock_nanosleep"), std::string::npos) << d.output;
  std::this_thread::sleep_for(std::chrono::seconds(8));  // beyond the hold, and a heartbeat more
  auto info = status_json(c);
  EXPECT_EQ(info["state"], "command") << info.dump();
  EXPECT_EQ(info["restarts"], 0) << info.dump();
  EXPECT_EQ(c.output(head).find("stopped (T)"), std::string::npos) << c.output(head);
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

// A py-spy beside the rank's interpreter (the job's venv, the job's files)
// is never what the diagnosis runs: it ran as the node's user (root, every
// capability). Only the node's PATH and atl's own install are looked in.
TEST(HangWatchJobs, TheDiagnosisNeverRunsAToolTheJobsFilesPlaced) {
  TestCluster c;
  const std::string venv = c.dir() + "/venv/bin";
  std::filesystem::create_directories(venv);
  std::filesystem::copy_file(std::filesystem::canonical("/usr/bin/python3"), venv + "/python3");
  const std::string marker = c.dir() + "/planted-ran";
  {
    std::ofstream planted(venv + "/py-spy");
    planted << "#!/bin/sh\ntouch " << marker << "\necho 'Thread 1 (idle): \"MainThread\"'\n";
  }
  std::filesystem::permissions(venv + "/py-spy", std::filesystem::perms::owner_all);
  auto& head =
      c.start_head({"--workers", "1", "--local-workers", "1", "--",
                    "echo up; exec " + venv + "/python3 -c 'import time; time.sleep(600)'"});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] up")) << c.output(head);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto d = c.atlctl({"--address", c.head_address(), "diagnose"});
  EXPECT_EQ(d.exit_code, 0) << d.output;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the job's own py-spy ran\n" << d.output;
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(HangWatchJobs, ARankStepAtFourFifthsOfTheTimeoutIsNeverSuspect) {
  // Merely slow: a line every 2.4 s against a 3 s timeout, for 15 s.
  TestCluster c;
  auto& head = c.start_head({"--workers", "2", "--local-workers", "2", "--hang-timeout", "3s", "--",
                             "for i in 1 2 3 4 5 6; do echo step $i; sleep 2.4; done"});
  ASSERT_TRUE(c.wait_for_output(head, "Job status:  succeeded", std::chrono::seconds(90)))
      << c.output(head);
  auto events = c.atlctl({"--address", c.head_address(), "events"});
  EXPECT_EQ(events.output.find("job suspect"), std::string::npos) << events.output;
  EXPECT_EQ(events.output.find("restarting"), std::string::npos) << events.output;
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

// A GPU fault seen by a pod's NVML watch (a fake NVML here: the driver's
// library as $ATL_NVML_LIBRARY, fed from a file): the guide's "delete the
// node that lost its GPU", done by the head as it happens.
TEST(GpuWatchJobs, AnXid79OnARanksPodTaintsItsNodeDeletesItAndTheJobRunsOnTheSpare) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "3", "--spare-workers", "1", "--",
                             "echo \"up rank=$RANK restart=$ATL_RESTART_COUNT\"; exec sleep 300"});
  std::vector<std::string> facts;
  std::vector<Started*> workers;
  for (int i = 0; i < 4; ++i) {
    facts.push_back(c.dir() + "/nvml-" + std::to_string(i));
    std::ofstream(facts.back()) << "gpus 2\n";
    workers.push_back(&c.start("worker" + std::to_string(i),
                               {bin("workernode"), "--head", c.head_address(), "--name",
                                c.worker_name(i), "--node", "test-node-" + std::to_string(i)},
                               {std::string("ATL_NVML_LIBRARY=") + ATL_FAKE_NVML_LIBRARY,
                                "ATL_FAKE_NVML=" + facts.back()}));
  }
  ASSERT_TRUE(c.wait_for_output(head, "[rank 2] up rank=2 restart=0")) << c.output(head);
  ASSERT_TRUE(c.wait_for_output(*workers[0], "watching 2 GPUs through NVML"))
      << c.output(*workers[0]);
  // Rank 1's pod: its GPU 1 falls off the bus.
  auto info = status_json(c);
  std::string pod;
  for (const auto& r : info["ranks"])
    if (r.value("rank", -1) == 1) pod = r["pod"];
  ASSERT_FALSE(pod.empty()) << info.dump();
  const int index = pod.back() - '0';
  std::ofstream(facts[index], std::ios::app) << "xid 1 79\n";
  const std::string reason =
      "pod " + pod + ": GPU 1 (GPU-fake-1): Xid 79, GPU has fallen off the bus";
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] up rank=1 restart=1", std::chrono::seconds(60)))
      << c.output(head);
  EXPECT_NE(c.output(*workers[index]).find("GPU fault: GPU 1 (GPU-fake-1): Xid 79"),
            std::string::npos)
      << c.output(*workers[index]);
  // Deleted: its exit code asks the platform to recreate it (elsewhere).
  EXPECT_EQ(c.wait_exit(*workers[index], std::chrono::seconds(30)), 4) << c.output(*workers[index]);
  info = status_json(c);
  EXPECT_EQ(info["restarts"], 1) << info.dump();
  ASSERT_EQ(info["taints"].size(), 1u) << info.dump();
  EXPECT_EQ(info["taints"][0]["node"], "test-node-" + std::to_string(index)) << info.dump();
  EXPECT_EQ(info["taints"][0]["source"], "platform") << info.dump();
  EXPECT_EQ(info["taints"][0]["reason"], reason) << info.dump();
  for (const auto& r : info["ranks"]) EXPECT_NE(r["pod"], pod) << info.dump();
  auto events = c.atlctl({"--address", c.head_address(), "events"});
  EXPECT_NE(events.output.find(reason), std::string::npos) << events.output;
  std::cout << events.output;
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(GpuWatchJobs, AProgramsXidIsLoggedOnItsNodeAndChangesNothing) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--", "echo up; exec sleep 300"});
  const std::string facts = c.dir() + "/nvml";
  std::ofstream(facts) << "gpus 1\n";
  auto& worker =
      c.start("worker0",
              {bin("workernode"), "--head", c.head_address(), "--name", c.worker_name(0), "--node",
               "test-node-0"},
              {std::string("ATL_NVML_LIBRARY=") + ATL_FAKE_NVML_LIBRARY, "ATL_FAKE_NVML=" + facts});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] up")) << c.output(head);
  ASSERT_TRUE(c.wait_for_output(worker, "watching 1 GPUs through NVML")) << c.output(worker);
  std::ofstream(facts, std::ios::app) << "xid 0 31\n";
  ASSERT_TRUE(c.wait_for_output(worker, "GPU 0 (GPU-fake-0): Xid 31")) << c.output(worker);
  auto info = status_json(c);
  EXPECT_EQ(info["state"], "command") << info.dump();
  EXPECT_EQ(info["restarts"], 0) << info.dump();
  EXPECT_TRUE(info["taints"].empty()) << info.dump();
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(HangWatchJobs, DiagnoseIsRefusedWhereThereAreNoRanks) {
  TestCluster c;
  auto& head = c.start_head(
      {"--mode", "driver", "--workers", "1", "--local-workers", "1", "--", "sleep 60"});
  ASSERT_TRUE(c.wait_for_status("command")) << c.output(head);
  auto d = c.atlctl({"--address", c.head_address(), "diagnose"});
  EXPECT_EQ(d.exit_code, 3) << d.output;
  EXPECT_NE(d.output.find("diagnose: job is in state command: no ranks to diagnose"),
            std::string::npos)
      << d.output;
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(HangWatchJobs, BadSettingsAreRefusedNamingTheFlag) {
  TestCluster c;
  struct Bad {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {{"--hang-timeout", "300"}, "--hang-timeout"},
           {{"--hang-timeout", "200ms"}, "'hang_timeout' must be 0 (off) or at least two"},
           {{"--on-hang", "panic"}, "bad on_hang 'panic'"},
           {{"--ray-ready-timeout", "soon"}, "--ray-ready-timeout: bad duration 'soon'"},
           {{"--ray-ready-timeout", "0"}, "'ray_ready_timeout' must be at least 1s"},
       }) {
    std::vector<std::string> args = {"--workers", "1"};
    args.insert(args.end(), bad.args.begin(), bad.args.end());
    args.insert(args.end(), {"--", "true"});
    auto& head = c.start_head(args);
    EXPECT_EQ(c.wait_exit(head), 2) << c.output(head);
    EXPECT_NE(c.output(head).find(bad.says), std::string::npos) << c.output(head);
  }
}

}  // namespace
}  // namespace atl::test
