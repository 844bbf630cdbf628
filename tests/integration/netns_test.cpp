// Several real hosts on one machine: the head and each worker in a network
// namespace of its own (own address, own veth, joined by a bridge). Cutting a
// worker's link is a real partition: no process dies, packets just stop.
// Needs root (ip netns); elsewhere the tests skip, saying why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "test_cluster.hpp"

namespace atl::test {
namespace {

int sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

// N hosts named h0..hN-1 in namespaces, 10.77.<net>.<k+1>/24 each, on a
// bridge that also gives this (root) namespace 10.77.<net>.254 to reach them.
class Hosts {
 public:
  explicit Hosts(int count) {
    std::mt19937 rng(std::random_device{}());
    tag_ = std::to_string(1000 + rng() % 9000);
    net_ = std::to_string(1 + rng() % 250);
    if (::geteuid() != 0) {
      why_not_ = "not root: network namespaces cannot be made";
      return;
    }
    bridge_ = "atlbr" + tag_;
    if (sh("ip link add " + bridge_ + " type bridge") != 0) {
      why_not_ = "cannot create a bridge (ip link add ... type bridge failed)";
      return;
    }
    sh("ip addr add 10.77." + net_ + ".254/24 dev " + bridge_);
    sh("ip link set " + bridge_ + " up");
    for (int k = 0; k < count; ++k) {
      std::string ns = "atl" + tag_ + "h" + std::to_string(k);
      std::string outside = "v" + tag_ + "h" + std::to_string(k);
      bool ok = sh("ip netns add " + ns) == 0 &&
                sh("ip link add " + outside + " type veth peer name eth0 netns " + ns) == 0 &&
                sh("ip link set " + outside + " master " + bridge_) == 0 &&
                sh("ip link set " + outside + " up") == 0 &&
                sh("ip -n " + ns + " addr add " + address(k) + "/24 dev eth0") == 0 &&
                sh("ip -n " + ns + " link set eth0 up") == 0 &&
                sh("ip -n " + ns + " link set lo up") == 0;
      namespaces_.push_back(ns);
      links_.push_back(outside);
      if (!ok) {
        why_not_ = "cannot set up network namespace " + ns;
        return;
      }
    }
  }
  ~Hosts() {
    for (const auto& ns : namespaces_) sh("ip netns del " + ns);
    for (const auto& link : links_) sh("ip link del " + link);
    if (!bridge_.empty()) sh("ip link del " + bridge_);
  }

  const std::string& why_not() const { return why_not_; }
  std::string address(int k) const { return "10.77." + net_ + "." + std::to_string(k + 1); }
  // argv prefix that runs a command on host k.
  std::vector<std::string> on(int k) const { return {"ip", "netns", "exec", namespaces_[k]}; }
  // Cuts (or restores) host k's only link.
  void link(int k, bool up) { sh("ip link set " + links_[k] + (up ? " up" : " down")); }

 private:
  std::string tag_, net_, bridge_, why_not_;
  std::vector<std::string> namespaces_, links_;
};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(NetworkNamespaces, ACutLinkIsDetectedAndASpareOnAnotherHostTakesOver) {
  Hosts hosts(4);  // h0 the head, h1..h3 three workers (two active, one spare)
  if (!hosts.why_not().empty()) GTEST_SKIP() << "skipped: " << hosts.why_not();
  TestCluster c;
  const std::string head_ip = hosts.address(0);
  auto& head = c.start(
      "headnode",
      concat(hosts.on(0), {bin("headnode"), "--port", "0", "--job-id", c.job_id(), "--state-dir",
                           c.state_dir(), "--bind", head_ip, "--workers", "2", "--spare-workers",
                           "1", "--heartbeat-timeout", "2s", "--linger", "60s", "--",
                           "echo \"start $RANK restart=$ATL_RESTART_COUNT on $(hostname -I)\"; "
                           "[ $ATL_RESTART_COUNT -ge 1 ] && exit 0; sleep 300"}));
  ASSERT_TRUE(c.wait_for_output(head, "listening on " + head_ip + ":")) << c.output(head);
  std::string out = c.output(head);
  auto at = out.find("listening on ") + 13;
  const std::string address = out.substr(at, out.find('\n', at) - at);
  for (int w = 0; w < 3; ++w) {
    c.start("worker" + std::to_string(w),
            concat(hosts.on(w + 1), {bin("workernode"), "--head", address, "--name",
                                     c.worker_name(w), "--node", "host-" + std::to_string(w + 1)}));
  }
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] start 1 restart=0 on " + hosts.address(2)))
      << c.output(head);
  // Each worker saw its peers at their own addresses.
  auto info = nlohmann::json::parse(c.atlctl({"--address", address, "status", "--json"}).output,
                                    nullptr, false);
  ASSERT_TRUE(info.is_object());
  EXPECT_EQ(info["pods"][0]["address"], hosts.address(1)) << info.dump();
  EXPECT_EQ(info["pods"][2]["role"], "spare") << info.dump();

  auto cut = std::chrono::steady_clock::now();
  hosts.link(2, false);  // worker 1's host drops off the network
  ASSERT_TRUE(c.wait_for_output(head, "pod " + c.worker_name(1) + " stopped answering", 30s))
      << c.output(head);
  auto detected = std::chrono::steady_clock::now() - cut;
  EXPECT_LT(detected, 2s + 3s) << "timeout 2 s; bench/fault measures it precisely";
  // The spare on host 3 takes rank 1; the job runs again from scratch and ends.
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] start 1 restart=1 on " + hosts.address(3), 60s))
      << c.output(head);
  ASSERT_TRUE(c.wait_for_output(head, "Job status:  succeeded", 60s)) << c.output(head);
  info = nlohmann::json::parse(c.atlctl({"--address", address, "status", "--json"}).output, nullptr,
                               false);
  EXPECT_EQ(info["restarts"], 1) << info.dump();
  EXPECT_EQ(info["pods"][1]["state"], "lost") << info.dump();
  hosts.link(2, true);
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
}

}  // namespace
}  // namespace atl::test
