// process_title_bytes: what a forked local pod writes over its argument
// strings so that /proc/PID/cmdline reads as its own argv.
#include "atl/os/process_title.hpp"

#include <gtest/gtest.h>

namespace {

using atl::os::process_title_bytes;

const std::vector<std::string> kArgv = {"/bin/workernode", "--name", "pod-0", "--head", "h:1"};

std::string nuls(std::size_t n) { return std::string(n, '\0'); }

TEST(ProcessTitle, AnArgvThatFitsIsWrittenNulSeparatedAndPaddedToTheAreasEnd) {
  auto bytes = process_title_bytes(kArgv, 50);
  const std::string all = std::string("/bin/workernode\0--name\0pod-0\0--head\0h:1\0", 40);
  EXPECT_EQ(bytes, all + nuls(10));
  EXPECT_EQ(process_title_bytes(kArgv, 40), all);  // exactly its size
}

TEST(ProcessTitle, TheLeadingArgumentsThatFitWholeAreKept) {
  EXPECT_EQ(process_title_bytes(kArgv, 39),
            std::string("/bin/workernode\0--name\0pod-0\0--head\0", 35) + nuls(4));
  EXPECT_EQ(process_title_bytes(kArgv, 29), std::string("/bin/workernode\0--name\0pod-0\0", 29));
  EXPECT_EQ(process_title_bytes(kArgv, 20), std::string("/bin/workernode\0", 16) + nuls(4));
}

TEST(ProcessTitle, APathThatDoesNotFitBecomesItsBaseNameThenIsCut) {
  EXPECT_EQ(process_title_bytes(kArgv, 15), std::string("workernode\0", 11) + nuls(4));
  EXPECT_EQ(process_title_bytes(kArgv, 25), std::string("/bin/workernode\0--name\0", 23) + nuls(2));
  EXPECT_EQ(process_title_bytes(kArgv, 6), std::string("worke\0", 6));
  EXPECT_EQ(process_title_bytes({"workernode", "--name", "p"}, 20),
            std::string("workernode\0--name\0p\0", 20));
}

TEST(ProcessTitle, NoAreaOrNoArgvNoBytes) {
  EXPECT_TRUE(process_title_bytes(kArgv, 0).empty());
  EXPECT_TRUE(process_title_bytes({}, 30).empty());
}

}  // namespace

namespace atl::os {
namespace {

TEST(ProcessTitle, TheUsersCommandIsLeftOutOfATitle) {
  EXPECT_EQ(title_without_command({"headnode", "--workers", "1", "--port", "0", "--", "python3",
                                   "-c", "import time; time.sleep(600)"},
                                  {"--entrypoint"}),
            (std::vector<std::string>{"headnode", "--workers", "1", "--port", "0"}));
  EXPECT_EQ(title_without_command({"headnode", "--entrypoint", "python3 train.py", "--workers", "2",
                                   "--entrypoint=python3 x.py"},
                                  {"--entrypoint"}),
            (std::vector<std::string>{"headnode", "--workers", "2"}));
  EXPECT_EQ(title_without_command({"atlctl", "run", "ps -ef | grep python"}, {"run"}),
            (std::vector<std::string>{"atlctl"}));
  EXPECT_EQ(title_without_command({"--"}, {}), (std::vector<std::string>{"--"}));
}

}  // namespace
}  // namespace atl::os
