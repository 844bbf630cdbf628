// DebugRuns: the guide's debug protocol's state. Every `atlctl run`, `check`
// and `burn` as a run (its ranks, its command, whether it holds the job in
// debugCommand), live ones and the newest N ended ones (BoundedHistory);
// which pod runs which (run, rank), so a lost pod ends its runs' ranks
// without a walk; and the latest check verdict of each pod. (atlctl stop and
// recover as operations: DebugCourse.)
//
// Plain C++: `Member` is one allreduce member's hello with whatever the
// shell answers it through. (Who waits for a run's start or end, and their
// answers: DebugCourse.)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "atl/core/rank_table.hpp"
#include "atl/supervisor/bounded_history.hpp"

namespace atl::supervisor {

using RunId = std::int32_t;

// One figure a burn or check measured in one round (atl-burn's control
// channel): the dashboard charts a run from these.
struct RunFigure {
  std::string pod;
  int gpu = 0;
  std::string metric;  // gemm_tflops, h2d_gbps, d2h_gbps, allreduce_busbw_gbps
  std::string size;    // allreduce's "8M"..., else empty
  int round = 0;
  double value = 0;
};

// A run's round figures, the first kFiguresPerRun of them (a day-long burn
// of 8 GPUs sends ~700,000): the rest are counted, not kept. Only the newest
// kRunsWithFigures runs that sent any keep theirs (an older run's are
// released: ~2 MB each, where the history keeps 10,000 runs).
inline constexpr std::size_t kFiguresPerRun = 20000;
inline constexpr std::size_t kRunsWithFigures = 8;

template <class MemberT>
struct BasicDebugRun {
  using Member = MemberT;
  RunId id = 0;
  bool tracked = true;    // false for run -f: stop leaves it alone
  bool is_check = false;  // atlctl check: its verdicts feed the taint candidates
  std::string command;
  RankTable ranks;  // rank -> record
  // A burn or check allreduce: each member's hello (rank -> member). Answered once.
  std::map<std::int32_t, MemberT> hellos;
  bool rendezvous_answered = false;
  // A burn or check: how long it may run and, once it ran past that and was
  // stopped, why (shown by atlctl).
  std::chrono::milliseconds deadline{0};
  std::string deadline_note;
  // Stopped by atlctl stop or a restart (not by its deadline): a check that
  // ends so has no verdict on its nodes.
  bool stopped = false;
  std::vector<RunFigure> figures;  // in the order they came, bounded
  std::size_t figures_dropped = 0;
  bool figures_released = false;  // a newer run's took their place
};

// The latest atlctl check verdict of a pod. A failed one makes the pod's
// node a platform taint candidate.
struct CheckVerdict {
  RunId run = 0;
  bool passed = true;
  std::string reason;
};

template <class Member>
class DebugRuns {
 public:
  using Run = BasicDebugRun<Member>;

  explicit DebugRuns(std::size_t finished_kept = kDefaultFinishedKept,
                     std::size_t rank_records_kept = kDefaultRankRecordsKept)
      : runs_(finished_kept, rank_records_kept) {}

  // --- runs ---------------------------------------------------------------

  // A new run (ids grow from 1), with its ranks on their pods.
  Run& open(bool tracked, bool is_check, std::string command, std::chrono::milliseconds deadline,
            const std::vector<std::pair<std::int32_t, std::string>>& ranks_on_pods) {
    Run run;
    run.id = next_run_++;
    run.tracked = tracked;
    run.is_check = is_check;
    run.command = std::move(command);
    run.deadline = deadline;
    for (const auto& [rank, pod] : ranks_on_pods) {
      run.ranks.add(rank, pod);
      by_pod_[pod].emplace(run.id, rank);
    }
    const RunId id = run.id;
    if (run.tracked) tracked_ = id;
    return runs_.add(id, std::move(run));
  }
  RunId next_id() const { return next_run_; }

  Run* find(RunId id) { return runs_.find(id); }
  const Run* find(RunId id) const { return runs_.find(id); }
  Run* live(RunId id) { return runs_.live(id); }
  Fate fate(RunId id) const { return runs_.fate(id); }

  // A round figure of live run `id` (false: no such live run). The first
  // figure of a run releases those of the oldest beyond kRunsWithFigures.
  bool add_figure(RunId id, RunFigure figure) {
    Run* run = live(id);
    if (!run) return false;
    if (run->figures.empty() && run->figures_dropped == 0) {
      with_figures_.push_back(id);
      while (with_figures_.size() > kRunsWithFigures) {
        if (Run* old = find(with_figures_.front())) {
          std::vector<RunFigure>().swap(old->figures);
          old->figures_released = true;
        }
        with_figures_.erase(with_figures_.begin());
      }
    }
    if (run->figures.size() < kFiguresPerRun) {
      run->figures.push_back(std::move(figure));
    } else {
      ++run->figures_dropped;
    }
    return true;
  }
  // Live and kept ended runs.
  std::size_t size() const { return runs_.live_count() + runs_.kept_count(); }
  template <class F>
  void for_each(F&& f) const {
    runs_.for_each(std::forward<F>(f));
  }
  template <class F>
  void for_each_live(F&& f) {
    runs_.for_each_live(std::forward<F>(f));
  }

  // A run whose every rank ended joins the bounded history (weighing its
  // ranks); the oldest ended ones beyond the bounds are dropped, with their
  // index entries. The ids dropped: their streams are to be forgotten.
  std::vector<RunId> retire(RunId id) {
    std::vector<RunId> dropped;
    const Run* run = runs_.live(id);
    const std::size_t weight = run ? std::max<std::size_t>(run->ranks.size(), 1) : 1;
    for (const auto& [old_id, old] : runs_.finish(id, weight)) {
      dropped.push_back(old_id);
      for (const auto& [rank, r] : old.ranks) {
        auto idx = by_pod_.find(r.pod);
        if (idx == by_pod_.end()) continue;
        idx->second.erase({old_id, rank});
        if (idx->second.empty()) by_pod_.erase(idx);
      }
    }
    return dropped;
  }
  // The rank records the ended runs held weigh together.
  std::size_t kept_rank_records() const { return runs_.kept_weight(); }

  // The (run, rank) pairs still running on `pod` (it is gone: they end).
  std::vector<std::pair<RunId, std::int32_t>> running_on(const std::string& pod) {
    std::vector<std::pair<RunId, std::int32_t>> out;
    auto idx = by_pod_.find(pod);
    if (idx == by_pod_.end()) return out;
    for (const auto& [id, rank] : idx->second) {
      const Run* run = runs_.live(id);
      if (!run) continue;
      auto r = run->ranks.find(rank);
      if (r != run->ranks.end() && r->second.pod == pod && !r->second.done)
        out.emplace_back(id, rank);
    }
    return out;
  }

  // The run that holds the job in debugCommand (0: none).
  RunId tracked() const { return tracked_; }
  // It no longer holds the job (a stop or a restart ended it): marked
  // stopped, so a check ending so gives no verdict. Returns its id.
  RunId release_tracked() {
    const RunId id = tracked_;
    if (Run* run = runs_.find(id)) run->stopped = true;
    tracked_ = 0;
    return id;
  }

  // --- check verdicts -----------------------------------------------------

  void record_verdict(const std::string& pod, RunId run, bool passed, std::string reason) {
    verdicts_[pod] = CheckVerdict{run, passed, passed ? std::string() : std::move(reason)};
  }
  const std::map<std::string, CheckVerdict>& verdicts() const { return verdicts_; }

 private:
  BoundedHistory<RunId, Run> runs_;
  RunId next_run_ = 1;
  RunId tracked_ = 0;
  // A pod's (run, rank) pairs. May hold stale entries; readers check the pod.
  std::map<std::string, std::set<std::pair<RunId, std::int32_t>>> by_pod_;
  std::map<std::string, CheckVerdict> verdicts_;
  std::vector<RunId> with_figures_;  // runs keeping figures, oldest first
};

}  // namespace atl::supervisor
