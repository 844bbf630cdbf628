#include "atl/supervisor/preflight.hpp"

#include <utility>

namespace atl::supervisor {

Preflight::Preflight(std::int32_t round, Plan plan) : round_(round), plan_(std::move(plan)) {}

std::vector<Preflight::Ask> Preflight::start() {
  if (plan_.head) {
    step_ = Step::head_dir;
    pending_ = 1;
    return {Ask{Ask::Kind::head_dir, *plan_.head, "", "", 0}};
  }
  return spec_then_network();
}

std::vector<Preflight::Ask> Preflight::fail(const std::string& pod, std::string problem) {
  if (!verdict_) verdict_ = Verdict{pod, std::move(problem)};
  step_ = Step::over;
  return {};
}

const NodeInfo* Preflight::active(const std::string& pod) const {
  for (const auto& info : plan_.active)
    if (info.pod == pod) return &info;
  return nullptr;
}

namespace {
std::string pods_text(std::size_t n) { return std::to_string(n) + (n == 1 ? " pod" : " pods"); }
}  // namespace

std::vector<std::string> Preflight::take_passed() {
  std::vector<std::string> out;
  out.swap(passed_);
  return out;
}

std::vector<Preflight::Ask> Preflight::spec_then_network() {
  if (plan_.active.empty()) {
    step_ = Step::over;
    verdict_ = Verdict{};
    return {};
  }
  for (const auto& i : plan_.active) {
    if (auto same =
            check_node_matches_spec(plan_.spec, NodeResources{i.cpus, i.gpus, i.memory, i.shm});
        !same)
      return fail(i.pod, "pod " + i.pod + " does not match the job's spec: " + same.error());
  }
  const std::size_t n = plan_.active.size();
  passed_.push_back("pre-flight: " + pods_text(n) + (n == 1 ? " matches" : " match") +
                    " the job's spec");
  std::vector<Ask> asks;
  if (n < 2) {
    step_ = Step::ring_passed;  // no ring of one
  } else {
    step_ = Step::probe;
    pending_ = n;
    for (const auto& i : plan_.active) asks.push_back(Ask{Ask::Kind::probe, i.pod, "", "", 0});
  }
  checks_asked_ = true;
  for (const auto& i : plan_.active) asks.push_back(Ask{Ask::Kind::check, i.pod, "", "", 0});
  return asks;
}

std::vector<Preflight::Ask> Preflight::network_reach() {
  step_ = Step::reach;
  const std::size_t n = plan_.active.size();
  pending_ = n;
  std::vector<Ask> asks;
  for (std::size_t k = 0; k < n; ++k) {
    const NodeInfo& to = plan_.active[(k + 1) % n];
    asks.push_back(Ask{Ask::Kind::reach, plan_.active[k].pod, to.pod, to.address, ports_[to.pod]});
  }
  return asks;
}

void Preflight::pass_if_all_in() {
  if (step_ != Step::ring_passed || checked_.size() != plan_.active.size()) return;
  step_ = Step::over;
  verdict_ = Verdict{};
  passed_.push_back("pre-flight: node checks passed on " + pods_text(plan_.active.size()) +
                    " (working dir, GPUs, the head reachable)");
}

std::vector<Preflight::Ask> Preflight::head_dir_checked(const std::string& problem) {
  if (step_ != Step::head_dir || pending_ == 0) return {};
  pending_ = 0;
  if (!problem.empty()) return fail(*plan_.head, "head pod " + *plan_.head + ": " + problem);
  passed_.push_back("pre-flight: the head pod's working dir is there and writable");
  return spec_then_network();
}

std::vector<Preflight::Ask> Preflight::probed(const std::string& pod, std::int32_t port,
                                              const std::string& error) {
  if (step_ != Step::probe || !active(pod) || ports_.count(pod)) return {};
  if (!error.empty())
    return fail(pod, "pod " + pod + " cannot listen for the network check: " + error);
  ports_[pod] = port;
  return --pending_ == 0 ? network_reach() : std::vector<Ask>{};
}

std::vector<Preflight::Ask> Preflight::reached(const std::string& from,
                                               const std::string& problem) {
  if (step_ != Step::reach || !active(from) || !reached_.insert(from).second) return {};
  if (!problem.empty()) {
    const std::size_t n = plan_.active.size();
    for (std::size_t k = 0; k < n; ++k) {
      if (plan_.active[k].pod != from) continue;
      const NodeInfo& to = plan_.active[(k + 1) % n];
      // The pod that cannot be reached is the one to blame.
      return fail(to.pod, "pod " + from + " cannot reach pod " + to.pod + " at " + to.address +
                              ":" + std::to_string(ports_[to.pod]) + " over TCP: " + problem);
    }
  }
  if (--pending_ != 0) return {};
  step_ = Step::ring_passed;
  passed_.push_back("pre-flight: the network ring passed: " + pods_text(plan_.active.size()) +
                    ", each reached the next over TCP");
  pass_if_all_in();
  return {};
}

std::vector<Preflight::Ask> Preflight::checked(const std::string& pod, const std::string& problem) {
  if (done() || !checks_asked_ || !active(pod) || checked_.count(pod)) return {};
  if (!problem.empty()) return fail(pod, "pod " + pod + " failed its check: " + problem);
  checked_.insert(pod);
  pass_if_all_in();
  return {};
}

std::vector<Preflight::Ask> Preflight::unanswered(const Ask& ask, const std::string& error) {
  if (done()) return {};
  switch (ask.kind) {
    case Ask::Kind::head_dir:
      if (step_ != Step::head_dir) return {};
      return fail(ask.pod,
                  "head pod " + ask.pod + " did not finish its check of the working dir: " + error);
    case Ask::Kind::probe:
      if (step_ != Step::probe) return {};
      return fail(ask.pod, "pod " + ask.pod + " did not answer the network check: " + error);
    case Ask::Kind::reach:
      if (step_ != Step::reach) return {};
      return fail(ask.pod, "pod " + ask.pod + " did not answer the network check: " + error);
    case Ask::Kind::check:
      if (!checks_asked_ || checked_.count(ask.pod)) return {};
      return fail(ask.pod, "pod " + ask.pod + " did not answer its check: " + error);
  }
  return {};
}

void Preflight::pod_left(const std::string& pod) {
  if (done() || !active(pod)) return;
  fail(pod, "pod " + pod + " left during the pre-flight");
}

}  // namespace atl::supervisor
