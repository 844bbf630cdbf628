// Stacks as py-spy and gdb print them (recorded from a real 3-rank gloo DDP
// job on this machine: ranks 0 and 1 wait in backward's allreduce, rank 2
// sleeps inside its training step), their signatures, and the grouping that
// names the outliers.
#include "atl/core/stacks.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "test_data.hpp"

namespace atl {
namespace {

std::string recorded(const std::string& name) { return test_data("stacks/" + name); }

TEST(Stacks, PySpysThreadsAndFramesAreRead) {
  auto threads = parse_py_spy(recorded("py-spy-two-threads.txt"));
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].name, "MainThread");
  EXPECT_EQ(threads[0].state, "idle");
  EXPECT_TRUE(threads[0].main);
  ASSERT_EQ(threads[0].frames.size(), 5u);
  EXPECT_EQ(threads[0].frames[0].function, "allreduce");
  EXPECT_EQ(threads[0].frames[0].file, "train.py");
  EXPECT_EQ(threads[0].frames[0].line, 3);
  EXPECT_EQ(threads[0].frames[4].function, "<module>");
  EXPECT_EQ(threads[1].name, "loader");
  EXPECT_FALSE(threads[1].main);
  EXPECT_EQ(threads[1].frames[0].function, "main.<locals>.<lambda>");

  auto spinning = parse_py_spy(recorded("py-spy-spinning.txt"));
  ASSERT_EQ(spinning.size(), 1u);
  EXPECT_EQ(spinning[0].state, "active+gil");
  EXPECT_EQ(stack_top(spinning), "spin (train.py)");
}

TEST(Stacks, ASignatureIsTheMainThreadsFunctionsAndFilesWithoutLines) {
  auto rank0 = parse_py_spy(recorded("py-spy-ddp-rank0-in-backward.txt"));
  EXPECT_EQ(stack_signature(rank0),
            "backward (torch/autograd/__init__.py) < Tensor.backward (torch/_tensor.py) < "
            "train_step (ddp.py) < main (ddp.py) < <module> (ddp.py)");
  EXPECT_EQ(stack_top(rank0), "backward (torch/autograd/__init__.py)");
  // The same place at another line is the same signature.
  auto moved = parse_py_spy(
      "Thread 1 (idle): \"MainThread\"\n    backward (torch/autograd/__init__.py:201)\n"
      "    Tensor.backward (torch/_tensor.py:490)\n    train_step (ddp.py:12)\n"
      "    main (ddp.py:30)\n    <module> (ddp.py:40)\n");
  EXPECT_EQ(stack_signature(moved), stack_signature(rank0));
  EXPECT_EQ(stack_signature({}), "");
}

TEST(Stacks, GdbsThreadsAndNativeFramesAreRead) {
  auto threads = parse_gdb(recorded("gdb-ddp-rank0.txt"));
  ASSERT_EQ(threads.size(), 6u);
  const ThreadStack* main = nullptr;
  for (const auto& t : threads)
    if (t.main) main = &t;
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(main->id, "1");
  EXPECT_EQ(main->name, "python3");
  ASSERT_GT(main->frames.size(), 14u);
  EXPECT_EQ(main->frames[0].function, "__futex_abstimed_wait_common64");
  EXPECT_EQ(main->frames[0].file, "./nptl/futex-internal.c");
  EXPECT_EQ(main->frames[0].line, 57);
  EXPECT_EQ(main->frames[5].function, "c10d::Reducer::finalize_backward()");
  EXPECT_EQ(main->frames[5].file, "/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13");
  EXPECT_EQ(main->frames[6].function, "??");
  EXPECT_EQ(main->frames[9].function,
            "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> "
            "const&)");
  EXPECT_EQ(stack_top(threads), "__futex_abstimed_wait_common64 (./nptl/futex-internal.c)");
}

TEST(Stacks, NothingThatIsNotAStackIsReadAsOne) {
  EXPECT_TRUE(parse_py_spy("").empty());
  EXPECT_TRUE(parse_py_spy("Error: Failed to find python version from target process\n").empty());
  EXPECT_TRUE(parse_gdb("ptrace: Operation not permitted.\n#0 stray frame\n").empty());
  // Frames before any thread, --locals lines and garbage are skipped.
  auto t = parse_py_spy(
      "    orphan (x.py:1)\nThread 9 (idle): \"MainThread\"\n    f (a.py:3)\n"
      "        Locals:\n            i: 3\n    no parens here\n    g (b.py:x)\n");
  ASSERT_EQ(t.size(), 1u);
  ASSERT_EQ(t[0].frames.size(), 2u);
  EXPECT_EQ(t[0].frames[1].function, "g");
  EXPECT_EQ(t[0].frames[1].file, "b.py:x");  // no number: kept whole, line 0
  EXPECT_EQ(t[0].frames[1].line, 0);
}

RankStack rank(std::int32_t r, const std::string& file, char state = 'S') {
  auto threads = parse_py_spy(recorded(file));
  return {r, "pod-" + std::to_string(r), stack_signature(threads), stack_top(threads), state, ""};
}

TEST(Stacks, TheRankOutsideTheDominantGroupIsTheOutlier) {
  auto d = group_stacks({rank(0, "py-spy-ddp-rank0-in-backward.txt"),
                         rank(1, "py-spy-ddp-rank0-in-backward.txt"),
                         rank(2, "py-spy-ddp-rank2-asleep-in-step.txt")});
  ASSERT_EQ(d.groups.size(), 2u);
  EXPECT_EQ(d.groups[0].ranks, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(d.groups[1].ranks, std::vector<std::int32_t>{2});
  EXPECT_EQ(d.outliers, std::vector<std::int32_t>{2});
  EXPECT_EQ(d.why,
            "rank 2 in train_step (ddp.py) while 2 ranks are in backward "
            "(torch/autograd/__init__.py)");
}

TEST(Stacks, AllAlikeOrAllApartBlamesNoOne) {
  auto alike = group_stacks(
      {rank(0, "py-spy-ddp-rank0-in-backward.txt"), rank(1, "py-spy-ddp-rank0-in-backward.txt")});
  ASSERT_EQ(alike.groups.size(), 1u);
  EXPECT_TRUE(alike.outliers.empty());
  EXPECT_EQ(alike.why, "");
  auto tie = group_stacks({rank(0, "py-spy-ddp-rank0-in-backward.txt"),
                           rank(1, "py-spy-ddp-rank2-asleep-in-step.txt")});
  EXPECT_EQ(tie.groups.size(), 2u);
  EXPECT_TRUE(tie.outliers.empty());  // one against one: no majority to stand apart from
}

TEST(Stacks, AStoppedRankIsAnOutlierEvenWithTheMajoritysStack) {
  auto d = group_stacks({rank(0, "py-spy-ddp-rank0-in-backward.txt"),
                         rank(1, "py-spy-ddp-rank0-in-backward.txt", 'T'),
                         rank(2, "py-spy-ddp-rank0-in-backward.txt")});
  EXPECT_EQ(d.outliers, std::vector<std::int32_t>{1});
  EXPECT_EQ(d.why, "rank 1 stopped (T) while 3 ranks are in backward (torch/autograd/__init__.py)");
  // The majority stuck and the rest elsewhere: the stuck ones, never everyone.
  auto majority = group_stacks({rank(0, "py-spy-ddp-rank0-in-backward.txt", 'T'),
                                rank(1, "py-spy-ddp-rank0-in-backward.txt", 'D'),
                                rank(2, "py-spy-ddp-rank2-asleep-in-step.txt")});
  EXPECT_EQ(majority.outliers, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(majority.why, "rank 0 stopped (T); rank 1 in uninterruptible sleep (D)");
  // Every rank stopped: nobody to blame.
  auto all =
      group_stacks({rank(0, "py-spy-spinning.txt", 'T'), rank(1, "py-spy-spinning.txt", 'T')});
  EXPECT_TRUE(all.outliers.empty());
}

TEST(Stacks, TwoLooksAgreeOnlyWhenTheStacksStoodStill) {
  auto hung = [] {
    return group_stacks({rank(0, "py-spy-ddp-rank0-in-backward.txt"),
                         rank(1, "py-spy-ddp-rank0-in-backward.txt"),
                         rank(2, "py-spy-ddp-rank2-asleep-in-step.txt")});
  };
  EXPECT_TRUE(same_grouping(hung(), hung()));
  // Working ranks caught elsewhere the second time: another odd one out.
  auto moved = group_stacks({rank(0, "py-spy-ddp-rank2-asleep-in-step.txt"),
                             rank(1, "py-spy-ddp-rank0-in-backward.txt"),
                             rank(2, "py-spy-ddp-rank0-in-backward.txt")});
  EXPECT_FALSE(same_grouping(hung(), moved));
  auto fewer = group_stacks(
      {rank(0, "py-spy-ddp-rank0-in-backward.txt"), rank(1, "py-spy-ddp-rank0-in-backward.txt")});
  EXPECT_FALSE(same_grouping(hung(), fewer));
}

TEST(Stacks, RanksWithoutAStackAreNoEvidence) {
  auto d = group_stacks({rank(0, "py-spy-ddp-rank0-in-backward.txt"),
                         rank(1, "py-spy-ddp-rank0-in-backward.txt"),
                         RankStack{2, "pod-2", "", "", 'S', ""}});
  EXPECT_EQ(d.unknown, std::vector<std::int32_t>{2});
  EXPECT_TRUE(d.outliers.empty());
  ASSERT_EQ(d.groups.size(), 1u);
}

TEST(Stacks, ManyOutliersAreSummedUpInOneLine) {
  std::vector<RankStack> ranks;
  for (int r = 0; r < 20; ++r) ranks.push_back(rank(r, "py-spy-ddp-rank0-in-backward.txt"));
  for (int r = 20; r < 31; ++r) ranks.push_back(rank(r, "py-spy-ddp-rank2-asleep-in-step.txt"));
  auto d = group_stacks(ranks);
  EXPECT_EQ(d.outliers.size(), 11u);
  EXPECT_EQ(d.why,
            "ranks 20,21,22,23,24,25,26,27,... (11) in train_step (ddp.py) while 20 ranks are in "
            "backward (torch/autograd/__init__.py)");
}

// Recorded from a real torch 1.13 DataLoader(num_workers=2): the main
// waiting for its next batch, one worker stuck in the dataset's
// __getitem__, one idle in its loop (waiting for indices).
TEST(Stacks, ARankWaitingOnItsLoaderNamesTheWorkerThatDoesNotDeliver) {
  auto main = parse_py_spy(recorded("py-spy-loader-main-waiting.txt"));
  auto stuck = parse_py_spy(recorded("py-spy-loader-worker-in-getitem.txt"));
  auto idle = parse_py_spy(recorded("py-spy-loader-worker-idle.txt"));
  EXPECT_EQ(stuck_loader_worker(1, main, {stuck, idle}),
            "rank 1's DataLoader worker 0 in Data.__getitem__ (loader.py)");
  EXPECT_EQ(stuck_loader_worker(1, main, {idle, stuck}),
            "rank 1's DataLoader worker 1 in Data.__getitem__ (loader.py)");
  // Helpers that are no loader workers are not counted.
  auto other = parse_py_spy(recorded("py-spy-spinning.txt"));
  EXPECT_EQ(stuck_loader_worker(1, main, {other, idle, stuck}),
            "rank 1's DataLoader worker 1 in Data.__getitem__ (loader.py)");
  // No worker caught fetching, or a main not waiting on its loader: nobody.
  EXPECT_EQ(stuck_loader_worker(1, main, {idle, idle}), "");
  auto in_step = parse_py_spy(recorded("py-spy-ddp-rank2-asleep-in-step.txt"));
  EXPECT_EQ(stuck_loader_worker(2, in_step, {stuck}), "");
  EXPECT_EQ(stuck_loader_worker(2, {}, {stuck}), "");
}

TEST(Stacks, AnOutlierWaitingOnItsLoaderIsBlamedOnItsWorker) {
  auto main = parse_py_spy(recorded("py-spy-loader-main-waiting.txt"));
  auto stuck = parse_py_spy(recorded("py-spy-loader-worker-in-getitem.txt"));
  RankStack waiting{1,
                    "pod-1",
                    stack_signature(main),
                    stack_top(main),
                    'S',
                    stuck_loader_worker(1, main, {stuck})};
  auto d = group_stacks({rank(0, "py-spy-ddp-rank0-in-backward.txt"), waiting,
                         rank(2, "py-spy-ddp-rank0-in-backward.txt")});
  EXPECT_EQ(d.outliers, std::vector<std::int32_t>{1});
  EXPECT_EQ(d.why.rfind("rank 1's DataLoader worker 0 in Data.__getitem__ (loader.py) while 2 "
                        "ranks are in ",
                        0),
            0u)
      << d.why;
}

}  // namespace
}  // namespace atl
