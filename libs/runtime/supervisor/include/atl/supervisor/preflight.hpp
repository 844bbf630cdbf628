// Preflight: one round of the checks every active pod passes before user code
// starts (the first time and at each restart). In order: the head's own
// working dir (a driver's, when it has one), each pod against the job's spec,
// then two things at once: the network (each pod listens, then pod k
// connects to pod k+1 over TCP: a ring) and each pod's own checks (working
// dir writable, GPUs there, the head reachable), which need nothing of the
// ring: one round trip less before a launch. Their lines come in that order
// whichever finishes first. The first problem is the round's verdict, naming the pod to
// blame; a round that a loss or a restart made moot is simply dropped by its
// owner and another begins (a new round id), so a late answer of the old one
// is never mistaken for the new one's.
//
// Plain C++: it says what to ask whom (Ask) and takes the answers; the shell
// sends the requests, with their timeouts, and feeds the answers back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "atl/core/job_spec.hpp"
#include "atl/core/node_info.hpp"

namespace atl::supervisor {

class Preflight {
 public:
  // One request of the round. `pod` is who is asked; for `reach`, `to` is
  // the pod it must connect to, at `host`:`port`.
  struct Ask {
    enum class Kind { head_dir, probe, reach, check };
    Kind kind = Kind::check;
    std::string pod;
    std::string to;
    std::string host;
    std::int32_t port = 0;
  };

  // Passed (no problem), or the first problem found and the pod it is about.
  struct Verdict {
    std::string pod;
    std::string problem;
    bool passed() const { return problem.empty(); }
  };

  struct Plan {
    std::vector<NodeInfo> active;     // the pods of the coming attempt, as they joined
    NodeResources spec;               // what each must be (seed 002: no mixed specs)
    std::optional<std::string> head;  // the head pod, when its working dir is to be checked
  };

  Preflight(std::int32_t round, Plan plan);

  std::int32_t round() const { return round_; }
  const std::optional<Verdict>& verdict() const { return verdict_; }
  bool done() const { return verdict_.has_value(); }

  // The first requests (none when the verdict is already in: no pods, or
  // one that does not match the spec).
  std::vector<Ask> start();
  // The answers. `problem` empty: that step passed. Each returns the next
  // requests (none while others are still out, or once the verdict is in).
  std::vector<Ask> head_dir_checked(const std::string& problem);
  std::vector<Ask> probed(const std::string& pod, std::int32_t port, const std::string& error);
  std::vector<Ask> reached(const std::string& from, const std::string& problem);
  std::vector<Ask> checked(const std::string& pod, const std::string& problem);
  // A request got no answer (its timeout, the pod's connection gone).
  std::vector<Ask> unanswered(const Ask& ask, const std::string& error);
  // An active pod is no longer there: the round cannot pass.
  void pod_left(const std::string& pod);

  // The steps that passed since the last call, in order, each a line for
  // the head's output ("pre-flight: the network ring passed: 4 pods, each
  // reached its neighbour over TCP"), so a start says what it checked.
  std::vector<std::string> take_passed();

 private:
  // The round's progress; the node checks run beside probe and reach.
  enum class Step { head_dir, probe, reach, ring_passed, over };
  std::vector<Ask> spec_then_network();
  std::vector<Ask> network_reach();
  void pass_if_all_in();  // the ring passed and every pod's check too
  std::vector<Ask> fail(const std::string& pod, std::string problem);
  const NodeInfo* active(const std::string& pod) const;

  std::int32_t round_;
  Plan plan_;
  Step step_ = Step::head_dir;
  std::size_t pending_ = 0;                    // the ring's answers still out in this step
  std::map<std::string, std::int32_t> ports_;  // each pod's probe port
  std::set<std::string> reached_;              // pods whose connect to the next answered
  bool checks_asked_ = false;
  std::set<std::string> checked_;  // pods whose own check passed
  std::optional<Verdict> verdict_;
  std::vector<std::string> passed_;
};

}  // namespace atl::supervisor
