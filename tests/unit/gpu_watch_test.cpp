// The GPU fault watch: the judgement from recorded looks, and NVML's events
// and counts decoded through the real dlopen layer over a fake NVML library
// (tests/fake_nvml) fed with recorded values.
#include "atl/gpu/gpu_watch.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "atl/gpu/nvml_watch.hpp"

namespace atl::gpu {
namespace {

GpuLook look(unsigned index) {
  GpuLook l;
  l.index = index;
  l.device = "GPU-" + std::to_string(index);
  l.ecc_uncorrected = 0;
  l.remapped = RemappedRows{};
  return l;
}

TEST(GpuFaultWatch, HealthyGpusGiveNothing) {
  GpuFaultWatch watch;
  for (int i = 0; i < 3; ++i) {
    auto v = watch.observe({look(0), look(1)});
    EXPECT_TRUE(v.faults.empty());
    EXPECT_TRUE(v.notes.empty());
  }
  EXPECT_FALSE(watch.faulted(0));
}

TEST(GpuFaultWatch, ACriticalXidIsAFaultNamingTheGpuAndTheXid) {
  GpuFaultWatch watch;
  watch.observe({look(0), look(1)});
  auto l = look(1);
  l.xids = {79};
  auto v = watch.observe({look(0), l});
  ASSERT_EQ(v.faults.size(), 1u);
  EXPECT_EQ(v.faults[0].index, 1u);
  EXPECT_EQ(v.faults[0].xid, 79);
  EXPECT_EQ(v.faults[0].reason, "GPU 1 (GPU-1): Xid 79, GPU has fallen off the bus");
  EXPECT_TRUE(watch.faulted(1));
  EXPECT_FALSE(watch.faulted(0));
}

TEST(GpuFaultWatch, EachCriticalXidOfTheCatalogueIsAFault) {
  for (int xid : {46, 48, 63, 64, 74, 79, 92, 95, 119, 120, 140, 143, 154}) {
    GpuFaultWatch watch;
    auto l = look(0);
    l.xids = {xid};
    auto v = watch.observe({l});
    ASSERT_EQ(v.faults.size(), 1u) << xid;
    EXPECT_EQ(v.faults[0].xid, xid);
  }
}

TEST(GpuFaultWatch, AProgramsXidIsANoteNotAFault) {
  // 31: the program's bad address; 43: a killed context; 94: contained ECC.
  GpuFaultWatch watch;
  auto l = look(0);
  l.xids = {31, 43, 94};
  auto v = watch.observe({l});
  EXPECT_TRUE(v.faults.empty());
  ASSERT_EQ(v.notes.size(), 3u);
  EXPECT_EQ(v.notes[0].text,
            "GPU 0 (GPU-0): Xid 31, GPU memory page fault (usually the program's bad address)");
  EXPECT_FALSE(watch.faulted(0));
}

TEST(GpuFaultWatch, AnUnknownXidIsANoteWithItsNumber) {
  GpuFaultWatch watch;
  auto l = look(0);
  l.xids = {999};
  auto v = watch.observe({l});
  EXPECT_TRUE(v.faults.empty());
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_EQ(v.notes[0].text, "GPU 0 (GPU-0): Xid 999");
}

TEST(GpuFaultWatch, ALostGpuIsAFault) {
  GpuFaultWatch watch;
  watch.observe({look(0)});
  auto l = look(0);
  l.lost = true;
  l.ecc_uncorrected.reset();
  l.remapped.reset();
  auto v = watch.observe({l});
  ASSERT_EQ(v.faults.size(), 1u);
  EXPECT_EQ(v.faults[0].reason,
            "GPU 0 (GPU-0): lost (NVML answers GPU_IS_LOST: it fell off the bus)");
}

TEST(GpuFaultWatch, ADoubleBitEventIsAFault) {
  GpuFaultWatch watch;
  auto l = look(0);
  l.double_bit_events = 1;
  auto v = watch.observe({l});
  ASSERT_EQ(v.faults.size(), 1u);
  EXPECT_EQ(v.faults[0].reason, "GPU 0 (GPU-0): double-bit ECC error");
}

TEST(GpuFaultWatch, TheEccCountAtTheFirstLookIsTheBaselineAndARiseIsAFault) {
  // Errors from before the watch are the pre-flight's to judge.
  GpuFaultWatch watch;
  auto l = look(0);
  l.ecc_uncorrected = 4;
  EXPECT_TRUE(watch.observe({l}).faults.empty());
  EXPECT_TRUE(watch.observe({l}).faults.empty());
  l.ecc_uncorrected = 6;
  auto v = watch.observe({l});
  ASSERT_EQ(v.faults.size(), 1u);
  EXPECT_EQ(v.faults[0].reason, "GPU 0 (GPU-0): 2 new uncorrected ECC errors");
}

TEST(GpuFaultWatch, AnEccCountReadableOnlyLaterSetsItsBaselineThen) {
  GpuFaultWatch watch;
  auto l = look(0);
  l.ecc_uncorrected.reset();
  watch.observe({l});
  l.ecc_uncorrected = 3;
  EXPECT_TRUE(watch.observe({l}).faults.empty());
  l.ecc_uncorrected = 4;
  EXPECT_EQ(watch.observe({l}).faults.size(), 1u);
}

TEST(GpuFaultWatch, APendingOrFailedRowRemapIsAFaultEvenAtTheFirstLook) {
  GpuFaultWatch watch;
  auto pending = look(0), failed = look(1);
  pending.remapped->pending = true;
  failed.remapped->failed = true;
  auto v = watch.observe({pending, failed});
  ASSERT_EQ(v.faults.size(), 2u);
  EXPECT_EQ(v.faults[0].reason, "GPU 0 (GPU-0): row remapping pending: the GPU needs a reset");
  EXPECT_EQ(v.faults[1].reason,
            "GPU 1 (GPU-1): row remapping failed: its memory cannot be repaired");
}

TEST(GpuFaultWatch, RemappedRowsWithoutPendingOrFailedAreNoFault) {
  GpuFaultWatch watch;
  auto l = look(0);
  l.remapped->corrected = 3;
  l.remapped->uncorrected = 1;
  EXPECT_TRUE(watch.observe({l}).faults.empty());
}

TEST(GpuFaultWatch, AGpusFaultIsReportedOnceAndOthersStillCount) {
  GpuFaultWatch watch;
  auto bad = look(0);
  bad.xids = {79};
  EXPECT_EQ(watch.observe({bad, look(1)}).faults.size(), 1u);
  bad.xids = {48};
  bad.lost = true;
  EXPECT_TRUE(watch.observe({bad, look(1)}).faults.empty());
  auto other = look(1);
  other.xids = {74};
  auto v = watch.observe({bad, other});
  ASSERT_EQ(v.faults.size(), 1u);
  EXPECT_EQ(v.faults[0].index, 1u);
}

TEST(GpuFaultWatch, TheLostReasonComesFirstAndANamelessGpuIsNamedByIndex) {
  GpuFaultWatch watch;
  GpuLook l;
  l.index = 3;
  l.lost = true;
  l.xids = {79};
  auto v = watch.observe({l});
  ASSERT_EQ(v.faults.size(), 1u);
  EXPECT_EQ(v.faults[0].reason, "GPU 3: lost (NVML answers GPU_IS_LOST: it fell off the bus)");
}

// NvmlWatcher over the fake NVML.
class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/atl-fake-nvml-XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    facts_ = tmpl;
    setenv("ATL_NVML_LIBRARY", ATL_FAKE_NVML_LIBRARY, 1);
    setenv("ATL_FAKE_NVML", facts_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("ATL_NVML_LIBRARY");
    unsetenv("ATL_FAKE_NVML");
    unlink(facts_.c_str());
  }
  void write(const std::string& text) { std::ofstream(facts_) << text; }
  void append(const std::string& text) { std::ofstream(facts_, std::ios::app) << text; }
  std::string facts_;
};

TEST_F(FakeNvml, NoDriverLibraryMeansNoWatcherAndSaysWhy) {
  setenv("ATL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  std::string why;
  EXPECT_EQ(NvmlWatcher::open(why), nullptr);
  EXPECT_EQ(why, "NVML not available (/nonexistent/libnvidia-ml.so.1 cannot be loaded)");
}

TEST_F(FakeNvml, NoGpuOrAFailedInitMeansNoWatcher) {
  write("gpus 0\n");
  std::string why;
  EXPECT_EQ(NvmlWatcher::open(why), nullptr);
  EXPECT_EQ(why, "NVML shows no GPU");
  write("gpus 2\ninit_fails\n");
  EXPECT_EQ(NvmlWatcher::open(why), nullptr);
  EXPECT_EQ(why, "NVML did not initialise (error 999)");
}

TEST_F(FakeNvml, LooksReadCountsAndDeliverEachEventOnce) {
  write("gpus 2\nuuid 1 GPU-5f3c\necc 0 2\nremap 1 3 1 0 0\n");
  std::string why;
  auto watcher = NvmlWatcher::open(why);
  ASSERT_NE(watcher, nullptr) << why;
  EXPECT_EQ(watcher->gpus(), 2u);
  EXPECT_EQ(watcher->note(), "");
  auto looks = watcher->look();
  ASSERT_EQ(looks.size(), 2u);
  EXPECT_EQ(looks[0].device, "GPU-fake-0");
  EXPECT_EQ(looks[1].device, "GPU-5f3c");
  EXPECT_EQ(looks[0].ecc_uncorrected, 2u);
  ASSERT_TRUE(looks[1].remapped);
  EXPECT_EQ(looks[1].remapped->corrected, 3u);
  EXPECT_EQ(looks[1].remapped->uncorrected, 1u);
  EXPECT_FALSE(looks[1].remapped->pending);
  EXPECT_TRUE(looks[0].xids.empty());
  append("xid 1 79\nxid 0 31\ndbe 0\n");
  looks = watcher->look();
  EXPECT_EQ(looks[0].xids, std::vector<int>{31});
  EXPECT_EQ(looks[0].double_bit_events, 1);
  EXPECT_EQ(looks[1].xids, std::vector<int>{79});
  looks = watcher->look();  // delivered already
  EXPECT_TRUE(looks[0].xids.empty());
  EXPECT_TRUE(looks[1].xids.empty());
  EXPECT_EQ(looks[0].double_bit_events, 0);
}

TEST_F(FakeNvml, AGpuAnsweringLostIsLookedAtAsLost) {
  write("gpus 2\n");
  std::string why;
  auto watcher = NvmlWatcher::open(why);
  ASSERT_NE(watcher, nullptr) << why;
  EXPECT_FALSE(watcher->look()[1].lost);
  append("lost 1\n");
  auto looks = watcher->look();
  EXPECT_FALSE(looks[0].lost);
  EXPECT_TRUE(looks[1].lost);
  EXPECT_FALSE(looks[1].ecc_uncorrected);
}

TEST_F(FakeNvml, RefusedEventsAreNotedAndCountsStillWatched) {
  write("gpus 1\nno_events\n");
  std::string why;
  auto watcher = NvmlWatcher::open(why);
  ASSERT_NE(watcher, nullptr) << why;
  EXPECT_EQ(watcher->note(),
            "NVML does not deliver Xid events for 1 of 1 GPUs here: only their counts are watched");
  append("ecc 0 1\n");
  EXPECT_EQ(watcher->look()[0].ecc_uncorrected, 1u);
}

TEST_F(FakeNvml, TheWatchOverTheFakeFindsAnXid79) {
  write("gpus 2\n");
  std::string why;
  auto watcher = NvmlWatcher::open(why);
  ASSERT_NE(watcher, nullptr) << why;
  GpuFaultWatch watch;
  EXPECT_TRUE(watch.observe(watcher->look()).faults.empty());
  append("xid 1 79\n");
  auto v = watch.observe(watcher->look());
  ASSERT_EQ(v.faults.size(), 1u);
  EXPECT_EQ(v.faults[0].reason, "GPU 1 (GPU-fake-1): Xid 79, GPU has fallen off the bus");
}

}  // namespace
}  // namespace atl::gpu
