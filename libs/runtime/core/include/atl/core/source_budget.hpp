// SourceBudget: how many new connections each source address may open, as a
// token bucket per address (`burst` at once, refilled at `per_second`). A
// flood from one address (thousands of TLS handshakes a second, each ~1 ms
// of the head's one I/O thread) is refused at accept, before any
// cryptography, while every other address (the job's pods, atlctl from
// another host) keeps its own budget. Pure bookkeeping in fake time; the
// head's accept (openssl_interpose.cpp) asks it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace atl {

class SourceBudget {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    double per_second = 250;         // refill rate of each address's bucket
    double burst = 500;              // its size: connections at once
    std::size_t max_sources = 8192;  // addresses tracked at once
  };

  SourceBudget() : SourceBudget(Options{}) {}
  explicit SourceBudget(Options options);

  // Whether a new connection from `source` is admitted at `now` (it takes a
  // token). With max_sources addresses tracked, idle ones (full buckets) are
  // forgotten to make room; if none is idle, a new address is admitted
  // untracked (never refused for the table's size).
  bool admit(const std::string& source, Clock::time_point now);

  struct Refusals {
    std::string source;
    std::int64_t count = 0;
  };
  // The connections refused since the last call, by address (most first).
  std::vector<Refusals> take_refusals();

  std::size_t sources() const { return buckets_.size(); }
  const Options& options() const { return options_; }

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point at;  // when `tokens` was true
    std::int64_t refused = 0;
  };
  void refill(Bucket& b, Clock::time_point now) const;
  void forget_idle(Clock::time_point now);

  Options options_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace atl
