// The working-dir check every pre-flight runs.
#include "atl/os/machine.hpp"

#include <gtest/gtest.h>
#include <netdb.h>
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
  EXPECT_EQ(missing.error(),
            "working dir /nonexistent/atl is not writable: No such file or directory: make it on "
            "every pod (a volume mounted there), or give the job a working dir the pods have");
  // /sys is read-only for root too.
  auto read_only = check_writable_dir("/sys");
  ASSERT_FALSE(read_only.ok());
  EXPECT_NE(read_only.error().find("/sys is not writable"), std::string::npos) << read_only.error();
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only dirs";
  char tmpl[] = "/tmp/atl-readonly-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  ::chmod(dir.c_str(), 0500);
  EXPECT_FALSE(check_writable_dir(dir).ok());
  ::chmod(dir.c_str(), 0700);
  std::system(("rm -rf " + dir).c_str());
}

// Seed 002's MASTER_ADDR is a pod's name where it resolves to the pod (a
// Kubernetes pod's hostname is its name): only this host's own name, only
// when it resolves to the address given.
TEST(OwnDnsName, OnlyThisHostsNameAndOnlyWhereItResolvesToTheAddress) {
  const std::string me = atl::os::host_name();
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string address;
  if (::getaddrinfo(me.c_str(), nullptr, &hints, &found) == 0) {
    char text[NI_MAXHOST];
    if (::getnameinfo(found->ai_addr, found->ai_addrlen, text, sizeof text, nullptr, 0,
                      NI_NUMERICHOST) == 0)
      address = text;
    ::freeaddrinfo(found);
  }
  EXPECT_EQ(atl::os::own_dns_name("jo-x-worker-0", address, std::chrono::seconds(1)), "")
      << "not this host's name";
  EXPECT_EQ(atl::os::own_dns_name(me, "203.0.113.7", std::chrono::seconds(1)), "")
      << "resolves elsewhere";
  if (address.empty()) GTEST_SKIP() << "this host's name " << me << " does not resolve here";
  EXPECT_EQ(atl::os::own_dns_name(me, address, std::chrono::seconds(1)), me);
}
