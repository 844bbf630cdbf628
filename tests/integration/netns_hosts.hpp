// Hosts: several real hosts on one machine for integration tests. Each host
// is a network namespace with its own address on a bridge; a test runs a
// process on host k with `ip netns exec`. Needs root: why_not() says why not.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace atl::test {

inline int sh(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str());
}

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
  // Host k's network namespace (/var/run/netns/<name>).
  const std::string& ns(int k) const { return namespaces_[k]; }
  // Cuts (or restores) host k's only link.
  void link(int k, bool up) { sh("ip link set " + links_[k] + (up ? " up" : " down")); }

 private:
  std::string tag_, net_, bridge_, why_not_;
  std::vector<std::string> namespaces_, links_;
};

inline std::vector<std::string> concat(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace atl::test
