// /proc sampling for the hang watch: stat lines parsed (odd command names
// included, bad ones refused), the state that matters most in a tree, and a
// real process tree summed and seen stopped.
#include "atl/os/process_sample.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

namespace atl::os {
namespace {

// Recorded on this machine from a SIGSTOPped python3.
constexpr const char* kStopped =
    "6526 (python3) T 6521 6521 30237 0 -1 4194304 2907 6540 0 0 87 1 4 0 20 0 1 0 3319627 "
    "16961536 3346 18446744073709551615 93882490482688 93882490483029 140737455824048 0 0 0 0 "
    "16781318 0 1 0 0 17 1 0 0 0 0 0 93882490494384 93882490495000 93882835066880 "
    "140737455831190 140737455831245 140737455831245 140737455833039 19\n";

TEST(ProcessSample, AStatLineGivesStateParentCpuAndThreads) {
  auto s = parse_proc_stat(kStopped);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->pid, 6526);
  EXPECT_EQ(s->comm, "python3");
  EXPECT_EQ(s->state, 'T');
  EXPECT_EQ(s->ppid, 6521);
  EXPECT_EQ(s->cpu_ticks, 87 + 1 + 4 + 0);  // utime + stime + cutime + cstime
  EXPECT_EQ(s->threads, 1);
  EXPECT_EQ(s->rss_pages, 3346);
}

TEST(ProcessSample, ACommandNameMayHoldSpacesAndParentheses) {
  auto s = parse_proc_stat("42 (my (odd) name) R 1 42 42 0 -1 0 0 0 0 0 5 6 0 0 20 0 3 0 1 1 1\n");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->comm, "my (odd) name");
  EXPECT_EQ(s->state, 'R');
  EXPECT_EQ(s->cpu_ticks, 11);
  EXPECT_EQ(s->threads, 3);
}

TEST(ProcessSample, WhatIsNotAStatLineIsRefused) {
  for (const char* bad :
       {"", "42", "42 python3 R 1", "(x) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18",
        "42 (x) R 1 2", "x (y) R 1 42 42 0 -1 0 0 0 0 0 5 6 0 0 20 0 3 0 1",
        "42 (x) R 1 42 42 0 -1 0 0 0 0 0 five 6 0 0 20 0 3 0 1",
        "42 (x) RR 1 42 42 0 -1 0 0 0 0 0 5 6 0 0 20 0 3 0 1"}) {
    EXPECT_FALSE(parse_proc_stat(bad).ok()) << bad;
  }
}

TEST(ProcessSample, StoppedOutranksUninterruptibleOutranksRunning) {
  EXPECT_EQ(worse_state('S', 'R'), 'R');
  EXPECT_EQ(worse_state('R', 'D'), 'D');
  EXPECT_EQ(worse_state('D', 'T'), 'T');
  EXPECT_EQ(worse_state('t', 'S'), 'T');  // a tracing stop is a stop
  EXPECT_EQ(worse_state('I', 'Z'), 'S');  // idle kernel threads, zombies: nothing to say
}

TEST(ProcessSample, ATreeSumsItsCpuAndTakesItsWorstState) {
  ProcessTable t;
  t[10] = {10, "guard", 'S', 1, 1, 1, 10};
  t[11] = {11, "sh", 'S', 10, 2, 1, 20};
  t[12] = {12, "python3", 'T', 11, 100, 4, 1000};
  t[13] = {13, "worker", 'D', 12, 50, 1, 500};
  t[14] = {14, "gone", 'Z', 12, 7, 1, 0};
  t[20] = {20, "other rank", 'R', 1, 999, 1, 7};
  auto s = sample_tree(t, 10);
  EXPECT_EQ(s.processes, 5);
  EXPECT_EQ(s.cpu_ticks, 1 + 2 + 100 + 50 + 7);
  EXPECT_EQ(s.rss_bytes, (10 + 20 + 1000 + 500) * ::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(s.state, 'T');
  EXPECT_EQ(sample_tree(t, 20).state, 'R');
  EXPECT_EQ(sample_tree(t, 99).processes, 0);  // gone
}

// Command lines and torch as a test says they are.
struct Facts {
  std::map<pid_t, std::string> cmdlines;
  std::set<pid_t> torch;
  ProcessFacts facts() const {
    return {[this](pid_t p) {
              auto it = cmdlines.find(p);
              return it == cmdlines.end() ? std::string() : it->second;
            },
            [this](pid_t p) { return torch.count(p) > 0; },
            [](pid_t) -> std::int64_t { return 0; }};
  }
};

TEST(ProcessSample, TheUsersProcessIsTheRanksInterpreterElseTheGuardsChild) {
  ProcessTable t;
  t[10] = {10, "caf.multiplexer", 'S', 1, 0, 1, 0};  // atl's guard
  t[11] = {11, "sh", 'S', 10, 0, 1, 0};
  t[12] = {12, "python3", 'R', 11, 0, 4, 0};
  t[13] = {13, "python3", 'S', 12, 0, 1, 0};  // a data loader worker: a fork
  Facts f;
  f.cmdlines = {{12, "python3 train.py"}, {13, "python3 train.py"}};
  auto children = child_index(t);
  EXPECT_EQ(user_process(t, children, 10, f.facts()), 12);
  t.erase(12);
  t.erase(13);
  t[14] = {14, "sleep", 'S', 11, 0, 1, 0};
  children = child_index(t);
  EXPECT_EQ(user_process(t, children, 10, f.facts()), 11);  // the entrypoint's shell, not its sleep
  t.erase(11);
  t.erase(14);
  children = child_index(t);
  EXPECT_EQ(user_process(t, children, 10, f.facts()), 10);  // nothing below the guard yet
  EXPECT_EQ(user_process(t, children, 99, f.facts()), 0);   // gone
}

TEST(ProcessSample, TheRanksMainIsFoundThroughItsWrappersAndApartFromItsLoaderWorkers) {
  // guard > bash -c > python -m launcher > python train.py (torch) > 2 loader
  // workers (forks) + the resource tracker; beside it, a wandb-like service.
  ProcessTable t;
  t[10] = {10, "atl-guard", 'S', 1, 0, 1, 0};
  t[11] = {11, "bash", 'S', 10, 0, 1, 0};
  t[12] = {12, "python3", 'S', 11, 0, 1, 0};
  t[20] = {20, "python3", 'S', 12, 0, 30, 0};
  t[31] = {31, "pt_data_worker", 'S', 20, 0, 2, 0};  // torch 2.9 names its workers
  t[30] = {30, "python3", 'S', 20, 0, 2, 0};
  t[32] = {32, "python3.11", 'S', 20, 0, 1, 0};
  t[33] = {33, "python3", 'S', 20, 0, 9, 0};
  t[34] = {34, "python3", 'Z', 20, 0, 1, 0};  // a reaped-soon worker
  Facts f;
  f.cmdlines = {{12, "python3 -m mylauncher train.py"},
                {20, "/usr/bin/python3 train.py --epochs 3"},
                {30, "/usr/bin/python3 train.py --epochs 3"},
                {31, "/usr/bin/python3 train.py --epochs 3"},
                {32, "python3.11 -c from multiprocessing.resource_tracker import main;main(7)"},
                {33, "python3 -m wandb.service --port 0"}};
  f.torch = {12, 20, 30, 31};  // the launcher imported torch too (torchrun does)
  auto children = child_index(t);
  auto rank = rank_processes(t, children, 10, f.facts());
  EXPECT_EQ(rank.main, 20);
  EXPECT_EQ(rank.helpers, (std::vector<pid_t>{30, 31, 32}));
  EXPECT_EQ(stack_target(t, children, 10, f.facts()), 20);
  EXPECT_EQ(user_process(t, children, 10, f.facts()), 20);
  EXPECT_TRUE(is_helper(t, 30, 20, f.facts()));
  EXPECT_FALSE(is_helper(t, 33, 20, f.facts()));
  EXPECT_FALSE(is_helper(t, 20, 12, f.facts()));  // exec'd: another command line

  // Without torch anywhere (plain Python scripts): the deepest interpreter
  // that is no helper, the launcher's child.
  f.torch.clear();
  t.erase(33);
  children = child_index(t);
  EXPECT_EQ(rank_processes(t, children, 10, f.facts()).main, 20);
  // A lone interpreter behind a shell: itself, whatever it holds.
  t.erase(12);
  t[20].ppid = 11;
  children = child_index(t);
  EXPECT_EQ(rank_processes(t, children, 10, f.facts()).main, 20);
  // Command lines that cannot be read prove no fork: the deepest is taken.
  EXPECT_EQ(rank_processes(t, children, 10, no_facts()).main, 30);
  // No Python: the deepest process; gone: 0.
  ProcessTable shell;
  shell[10] = {10, "atl-guard", 'S', 1, 0, 1, 0};
  shell[11] = {11, "sh", 'S', 10, 0, 1, 0};
  shell[12] = {12, "sleep", 'S', 11, 0, 1, 0};
  EXPECT_EQ(rank_processes(shell, child_index(shell), 10, f.facts()).main, 12);
  EXPECT_EQ(rank_processes(shell, child_index(shell), 99, f.facts()).main, 0);
}

TEST(ProcessSample, ATreesIoIsTheSumOfItsProcesses) {
  ProcessTable t;
  t[10] = {10, "guard", 'S', 1, 0, 1, 0};
  t[11] = {11, "python3", 'D', 10, 0, 1, 0};
  t[12] = {12, "python3", 'S', 11, 0, 1, 0};
  ProcessFacts facts = no_facts();
  facts.io_bytes = [](pid_t p) -> std::int64_t { return p == 11 ? 5000 : p == 12 ? 700 : 0; };
  EXPECT_EQ(sample_tree(t, child_index(t), 10, facts).io_bytes, 5700);
  // This process's own, read from /proc: it has read and written something.
  EXPECT_GT(live_facts().io_bytes(::getpid()), 0);
  EXPECT_NE(live_facts().cmdline(::getpid()).find("atl_unit_tests"), std::string::npos)
      << live_facts().cmdline(::getpid());
  EXPECT_FALSE(live_facts().holds_torch(::getpid()));
}

TEST(ProcessSample, ARealTreeIsFoundAndSeenStopped) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", "sleep 30 & sleep 30 & wait", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  TreeSample s;
  // Until all three are there and asleep (a sleep just exec'd may still be R
  // on a loaded machine).
  for (int i = 0; i < 500 && (s.processes < 3 || s.state != 'S'); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = sample_tree(read_process_table(), pid);
  }
  EXPECT_EQ(s.processes, 3);  // sh and its two sleeps
  EXPECT_EQ(s.state, 'S');
  EXPECT_GT(s.rss_bytes, 0);
  ::kill(pid, SIGSTOP);
  for (int i = 0; i < 500 && s.state != 'T'; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = sample_tree(read_process_table(), pid);
  }
  EXPECT_EQ(s.state, 'T');
  for (const auto& [p, st] : read_process_table())
    if (st.ppid == pid) ::kill(p, SIGKILL);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace
}  // namespace atl::os
