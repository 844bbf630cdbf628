// A rank's grace on real processes: a SIGTERM handler that saves a checkpoint
// runs to its end under a shell wrapper, through atlctl stop, a restart and
// the job's end, and the rank is reported as its handler ended it.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "test_cluster.hpp"

namespace atl::test {
namespace {

// Saves "<dir>/saved.<rank>.<restart>" 2 s into its SIGTERM handler, then
// exits 0; exits 3 by itself once "<dir>/fail.<rank>" appears.
std::string write_rank_script(const std::string& dir) {
  std::string path = dir + "/term.py";
  std::ofstream(path) << R"(import os, signal, sys, time
d = sys.argv[1]
rank = os.environ["RANK"]
restart = os.environ.get("ATL_RESTART_COUNT", "0")
def on_term(*_):
    time.sleep(2)
    with open(f"{d}/saved.{rank}.{restart}", "w") as f:
        f.write("saved")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
while True:
    if os.path.exists(f"{d}/fail.{rank}"):
        sys.exit(3)
    time.sleep(0.1)
)";
  return path;
}

bool saved(const TestCluster& c, int rank, int restart) {
  return std::filesystem::exists(c.dir() + "/saved." + std::to_string(rank) + "." +
                                 std::to_string(restart));
}

struct Form {
  const char* name;
  std::vector<std::string> words;  // after "--"; %S: the script, %D: the folder
};

std::vector<std::string> entrypoint(const Form& form, const std::string& script,
                                    const std::string& dir) {
  std::vector<std::string> out;
  for (std::string w : form.words) {
    for (auto [key, value] : {std::pair{"%S", script}, {"%D", dir}}) {
      auto at = w.find(key);
      if (at != std::string::npos) w.replace(at, 2, value);
    }
    out.push_back(w);
  }
  return out;
}

void PrintTo(const Form& form, std::ostream* os) { *os << form.name; }

// Until `text` is in p's output `times` times (false after 60 s).
bool output_holds(const TestCluster& c, const Started& p, const std::string& text, int times) {
  for (int i = 0; i < 3000; ++i) {
    const std::string out = c.output(p);
    int seen = 0;
    for (auto at = out.find(text); at != std::string::npos; at = out.find(text, at + 1)) ++seen;
    if (seen >= times) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

class GraceForms : public ::testing::TestWithParam<Form> {};

// The guide's stop: the handler gets its 2 s (of a 5 s grace) in every form.
TEST_P(GraceForms, AtlctlStopLeavesTheHandlerItsGrace) {
  TestCluster c;
  std::string script = write_rank_script(c.dir());
  std::vector<std::string> args = {"--workers", "1", "--local-workers", "1", "--grace", "5s", "--"};
  for (auto& w : entrypoint(GetParam(), script, c.dir())) args.push_back(w);
  auto& head = c.start_head(args);
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] ready")) << c.output(head);
  auto stop = c.atlctl({"--address", c.head_address(), "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.output;
  EXPECT_EQ(stop.output, "Stopping task in all workers...\nStop job task success.\n");
  EXPECT_TRUE(saved(c, 0, 0)) << "the checkpoint was never written\n" << c.output(head);
  EXPECT_TRUE(c.wait_for_output(head, "rank-0 ended: exit code 0")) << c.output(head);
  EXPECT_EQ(c.output(head).find("outlived its grace"), std::string::npos) << c.output(head);
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

// torchelastic's shape: the handler raises, the checkpoint is taken in
// `except` (a second SIGTERM there loses it), in every form, stop after stop.
TEST_P(GraceForms, AtlctlStopLeavesARaisingHandlerItsCheckpoint) {
  TestCluster c;
  const std::string script = c.dir() + "/raise.py";
  std::ofstream(script) << R"(import os, signal, sys, time
class SignalException(Exception): pass
def on_term(*_): raise SignalException()
signal.signal(signal.SIGTERM, on_term)
d = sys.argv[1]
try:
    print("ready", flush=True)
    while True: time.sleep(1)
except SignalException:
    time.sleep(0.5)
    n = len([f for f in os.listdir(d) if f.startswith("ckpt.")])
    open(f"{d}/ckpt.{n}", "w").write("saved")
    sys.exit(0)
)";
  std::vector<std::string> args = {"--workers", "1", "--local-workers", "1", "--grace",
                                   "10s",       "--"};
  for (auto& w : entrypoint(GetParam(), script, c.dir())) args.push_back(w);
  auto& head = c.start_head(args);
  constexpr int kStops = 4;
  for (int stop = 0; stop < kStops; ++stop) {
    ASSERT_TRUE(output_holds(c, head, "[rank 0] ready", stop + 1)) << c.output(head);
    auto stopped = c.atlctl({"--address", c.head_address(), "stop"});
    ASSERT_EQ(stopped.exit_code, 0) << stopped.output;
    EXPECT_TRUE(std::filesystem::exists(c.dir() + "/ckpt." + std::to_string(stop)))
        << "stop " << stop << ": the checkpoint was lost\n"
        << c.output(head);
    if (stop + 1 < kStops) {
      auto recovered = c.atlctl({"--address", c.head_address(), "recover"});
      ASSERT_EQ(recovered.exit_code, 0) << recovered.output;
    }
  }
  EXPECT_EQ(c.output(head).find("outlived its grace"), std::string::npos) << c.output(head);
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

INSTANTIATE_TEST_SUITE_P(Entrypoints, GraceForms,
                         ::testing::Values(Form{"OneWord", {"python3 %S %D"}},
                                           Form{"Argv", {"python3", "%S", "%D"}},
                                           Form{"Exec", {"exec python3 %S %D"}}),
                         [](const ::testing::TestParamInfo<Form>& info) {
                           return std::string(info.param.name);
                         });

// The same grace when a fault restarts the job and when the job ends.
TEST(Grace, ARestartAndTheJobsEndLeaveTheHandlerItsGrace) {
  TestCluster c;
  std::string script = write_rank_script(c.dir());
  auto& head = c.start_head({"--workers", "2", "--local-workers", "2", "--grace", "5s", "--",
                             "python3 " + script + " " + c.dir()});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] ready")) << c.output(head);
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] ready")) << c.output(head);
  // A lost pod: rank 0 on the other one is stopped for the restart.
  ASSERT_EQ(::kill(c.worker_pid(1), SIGKILL), 0);
  ASSERT_TRUE(c.wait_for_output(head, "job restarted: attempt 2", 60s)) << c.output(head);
  EXPECT_TRUE(saved(c, 0, 0)) << "no checkpoint on the restart\n" << c.output(head);
  // Attempt 2 runs; rank 1 fails, the job ends and rank 0 is stopped.
  for (int i = 0; i < 600 && count_lines(c.output(head)) > 0; ++i) {
    std::string out = c.output(head);
    auto first = out.find("[rank 0] ready");
    if (first != std::string::npos && out.find("[rank 0] ready", first + 1) != std::string::npos &&
        out.find("[rank 1] ready", out.find("job restarted: attempt 2")) != std::string::npos)
      break;
    std::this_thread::sleep_for(100ms);
  }
  std::ofstream(c.dir() + "/fail.1") << "now";
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_TRUE(saved(c, 0, 1)) << "no checkpoint at the job's end\n" << c.output(head);
  EXPECT_EQ(c.output(head).find("outlived its grace"), std::string::npos) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

// Slurm's --signal: with --stop-signal USR1@3s each rank's own process
// (behind a bash wrapper, beside its DataLoader-style forked workers, which
// must not hear it) gets SIGUSR1 3 s before the SIGTERM of a stop, and its
// checkpoint, taken in the main loop, is complete before the SIGTERM comes.
TEST(Grace, AStopWarningReachesEachRanksOwnProcessBeforeItsSigterm) {
  TestCluster c;
  std::ofstream(c.dir() + "/warned.py") << R"(import os, signal, sys, time
d = sys.argv[1]
rank = os.environ["RANK"]
warned = []
signal.signal(signal.SIGUSR1, lambda *_: warned.append(time.time()))
def on_term(*_):
    with open(f"{d}/term.{rank}", "w") as f:
        f.write(str(time.time()))
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
workers = []
for _ in range(2):  # forked helpers, as a DataLoader's: USR1 would kill them
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        while True:
            time.sleep(1)
    workers.append(pid)
print("ready", flush=True)
while True:
    if warned:
        with open(f"{d}/ckpt.{rank}", "w") as f:
            alive = all(os.waitpid(w, os.WNOHANG) == (0, 0) for w in workers)
            f.write("%f %s" % (warned[0], "workers alive" if alive else "a worker died"))
        print("checkpointed", flush=True)
        warned.clear()
    time.sleep(0.05)
)";
  auto& head = c.start_head({"--workers", "2", "--local-workers", "2", "--stop-signal", "USR1@3s",
                             "--", "bash -c 'python3 " + c.dir() + "/warned.py " + c.dir() + "'"});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] ready")) << c.output(head);
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] ready")) << c.output(head);
  auto stop = c.atlctl({"--address", c.head_address(), "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.output;
  for (int rank : {0, 1}) {
    const std::string ckpt = read_file(c.dir() + "/ckpt." + std::to_string(rank));
    const std::string term = read_file(c.dir() + "/term." + std::to_string(rank));
    ASSERT_FALSE(ckpt.empty()) << "rank " << rank << " was never warned\n" << c.output(head);
    ASSERT_FALSE(term.empty()) << "rank " << rank << " never had its SIGTERM\n" << c.output(head);
    EXPECT_NE(ckpt.find("workers alive"), std::string::npos) << ckpt;
    // The SIGTERM came ~3 s after the warning, not before.
    const double warned_at = std::stod(ckpt), termed_at = std::stod(term);
    EXPECT_GE(termed_at - warned_at, 2.5) << ckpt << " / " << term;
  }
  EXPECT_NE(c.output(head).find("rank-0: signal 10 to pid "), std::string::npos) << c.output(head);
  EXPECT_EQ(c.output(head).find("outlived its grace"), std::string::npos) << c.output(head);
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

}  // namespace
}  // namespace atl::test
