// Xid reports as the driver writes them, in dmesg's and /dev/kmsg's forms.
#include "atl/gpu/xid.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

using namespace atl::gpu;

TEST(Xid, ParsesADmesgLine) {
  auto ev = parse_xid_line(
      "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
      "name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 1, SM 0)");
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->pci, "0000:cb:00");
  EXPECT_EQ(ev->xid, 13);
  EXPECT_EQ(ev->text.rfind("NVRM: Xid (PCI:0000:cb:00): 13", 0), 0u);
}

TEST(Xid, ParsesAKmsgRecord) {
  auto ev = parse_xid_line(
      "3,1552,1234567890,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has "
      "fallen off the bus.\n");
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->pci, "0000:3b:00");
  EXPECT_EQ(ev->xid, 79);
  EXPECT_EQ(ev->text.back(), '.');  // the newline is not part of the text
}

TEST(Xid, IgnoresWhatIsNotAnXidReport) {
  EXPECT_FALSE(parse_xid_line(""));
  EXPECT_FALSE(parse_xid_line("6,1,2,-;eth0: link up"));
  EXPECT_FALSE(parse_xid_line("NVRM: loading NVIDIA UNIX x86_64 Kernel Module"));
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:0000:3b:00): , pid=1"));      // no number
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:garbage): 79, pid=1"));       // no address
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:0000:3b:00) 79, pid=1"));     // no "):"
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:0000:3b:00): 99999999, x"));  // absurd
  // A domain too long for any integer (found by fuzzing: stoul threw).
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:000055555555555555555555:18:00): 48, pid=1"));
}

TEST(Xid, CriticalOnesAreTheHardwaresNotTheProgramsFaults) {
  for (int xid : {46, 48, 63, 64, 74, 79, 92, 95, 119, 120, 140, 143, 154})
    EXPECT_TRUE(xid_is_critical(xid)) << xid;
  // RESTART_APP in NVIDIA's catalogue: the application's problem, not the node's.
  for (int xid : {13, 31, 43, 45, 94, 12345}) EXPECT_FALSE(xid_is_critical(xid)) << xid;
  EXPECT_EQ(xid_meaning(79), "GPU has fallen off the bus");
  EXPECT_EQ(xid_meaning(12345), "");
}

TEST(Xid, PciAddressesCompareWhateverTheirSpelling) {
  EXPECT_TRUE(same_pci_device("0000:3b:00", "0000:3B:00.0"));      // kernel log vs CUDA
  EXPECT_TRUE(same_pci_device("00000000:3B:00.0", "0000:3b:00"));  // NVML vs kernel log
  EXPECT_FALSE(same_pci_device("0000:3b:00", "0000:3c:00.0"));
  EXPECT_FALSE(same_pci_device("0001:3b:00", "0000:3b:00"));
  EXPECT_FALSE(same_pci_device("", "0000:3b:00"));
  EXPECT_FALSE(same_pci_device("3b:00", "0000:3b:00"));
}

TEST(Xid, ReadsEveryReportFromAKernelLogFile) {
  char path[] = "/tmp/atl-kmsg-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream log(path);
    log << "6,1,100,-;eth0: link up\n"
        << "3,2,200,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
        << " SUBSYSTEM=pci\n"
        << "4,3,300,-;NVRM: Xid (PCI:0000:5e:00): 31, pid=2, name=python, Ch 00000010\n"
        << "4,4,400,-;NVRM: Xid (PCI:0000:5e:00): 48, pid=2, DBE";  // no final newline
  }
  auto got = read_kernel_xids(path);
  std::remove(path);
  ASSERT_TRUE(got.readable);
  ASSERT_EQ(got.events.size(), 3u);
  EXPECT_EQ(got.events[0].xid, 79);
  EXPECT_EQ(got.events[1].xid, 31);
  EXPECT_EQ(got.events[2].xid, 48);
  EXPECT_EQ(got.events[2].pci, "0000:5e:00");
}

TEST(Xid, AnUnreadableLogIsReportedNotFatal) {
  auto got = read_kernel_xids("/nonexistent/kmsg");
  EXPECT_FALSE(got.readable);
  EXPECT_NE(got.note.find("/nonexistent/kmsg"), std::string::npos) << got.note;
  EXPECT_TRUE(got.events.empty());
}
