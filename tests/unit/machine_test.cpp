// The working-dir check every pre-flight runs.
#include "atl/os/machine.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

using atl::os::check_writable_dir;

TEST(WritableDir, ConcurrentChecksAndStaleProbesDoNotCollide) {
  char tmpl[] = "/tmp/atl-writable-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  // What an older version left behind when it died mid-check with our pid.
  std::ofstream(dir + "/.atl-write-check-" + std::to_string(::getpid())) << "stale";
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&] {
      for (int j = 0; j < 20; ++j)
        if (!check_writable_dir(dir)) ++failed;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  std::system(("rm -rf " + dir).c_str());
}

TEST(WritableDir, AMissingOrReadOnlyDirIsNamed) {
  auto missing = check_writable_dir("/nonexistent/atl");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/atl is not writable"), std::string::npos);
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only dirs";
  char tmpl[] = "/tmp/atl-readonly-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  ::chmod(dir.c_str(), 0500);
  EXPECT_FALSE(check_writable_dir(dir).ok());
  ::chmod(dir.c_str(), 0700);
  std::system(("rm -rf " + dir).c_str());
}
