// JobController: the job's course, the one piece that decides across the
// others. It owns the lifecycle, the restart budget, the taints, the active
// pods, the timeline and the ending; every input that can change the job's
// course (a fault, a pre-flight verdict, user code ending, a pod gone, one of
// its timers, a signal, a resumed record) comes here, and what follows goes
// out through JobEffects: the only way to the other pieces and to the world.
// Plain C++: tested against a fake JobEffects in fake time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/job_spec.hpp"
#include "atl/core/lifecycle.hpp"
#include "atl/core/restart_policy.hpp"
#include "atl/core/taints.hpp"
#include "atl/os/job_store.hpp"
#include "atl/supervisor/attempt_book.hpp"
#include "atl/supervisor/goodput.hpp"
#include "atl/supervisor/preflight.hpp"
#include "atl/supervisor/refusal.hpp"
#include "atl/supervisor/user_code.hpp"

namespace spdlog {
class logger;
}

namespace atl::supervisor {

// One line of the job's timeline (atlctl events).
struct TimelineEvent {
  std::int64_t unix_ms = 0;
  std::string kind;  // state, fault, restart, pod, delete, taint, hang
  std::string text;
};

// The kinds an incident needs (`atlctl events --faults`, the dashboard's
// "faults only"): what went wrong and what atl did about it (fault, hang,
// restart, taint, delete), without the state flips and pods coming and going.
bool is_fault_kind(std::string_view kind);

// The controller's own timers; each carries a tag (the restart round it was
// armed in), so that an older round's timer finds itself moot.
enum class JobTimer : std::int32_t {
  ready,          // pods did not all come (back) within the ready timeout
  fail_stop,      // ranks did not report after a failure: end anyway
  restart_stop,   // ranks of the faulted attempt did not report: go on without them
  restart_retry,  // a failed pre-flight of a restart: try again
  shutdown,       // workers did not leave after the end
  linger,         // the ended job's dashboard time is over
  waiting,        // pending: say again who has joined and who is missing
};
inline constexpr std::int32_t kJobTimerCount = 7;
// How often a pending job says what it waits for.
inline constexpr std::chrono::seconds kWaitingEvery{10};

// Everything the controller reads of pieces it does not own, and everything
// it does. The shell implements it over the pieces and CAF; tests fake it.
class JobEffects {
 public:
  virtual ~JobEffects() = default;

  // --- reads ---
  virtual std::int64_t unix_ms() const = 0;
  virtual int attempt() const = 0;          // UserCode's current attempt
  virtual bool user_code_done() const = 0;  // every process of the attempt reported its end
  virtual std::vector<PodView> pod_views() const = 0;  // every worker pod, joined or not
  virtual std::string missing_pods() const = 0;        // "worker-1, worker-3" or empty
  virtual const std::string* machine_of(const std::string& pod) const = 0;
  virtual bool preflight_under_way() const = 0;

  // --- effects ---
  virtual void print(const std::string& line) = 0;  // the head's output (stdout, head.log)
  virtual void save(os::JobRecord record) = 0;      // the durable state (a writer thread)
  virtual void add_event(const TimelineEvent& event) = 0;
  virtual void reset_journal() = 0;  // a job submitted anew: the old record goes
  virtual void arm(JobTimer timer, std::chrono::milliseconds delay, std::int32_t tag) = 0;
  virtual void next_attempt() = 0;     // UserCode: a restart's new attempt
  virtual void start_user_code() = 0;  // plan and launch the attempt on active()
  virtual void stop_user_code() = 0;   // SIGTERM (SIGKILL after the grace) to every process
  // Processes of the attempt that never reported count as ended, `why`.
  virtual void abandon_user_code(const std::string& why) = 0;
  virtual void start_preflight() = 0;                     // a new round over active()
  virtual void drop_preflight() = 0;                      // the round under way is moot
  virtual void end_parked_debug_run() = 0;                // the debug command holding the job stops
  virtual void end_pod_work(const std::string& pod) = 0;  // its ranks and debug runs ended with it
  // A pod gone while the job is parked in a debug state (ray: the rest of
  // the cluster is stopped; a stop waiting on its ranks is done).
  virtual void pod_gone_while_parked(const std::string& detail) = 0;
  virtual void placement_changed() = 0;  // taints changed: placement looks again
  // The job ended: groups cleared, remaining processes abandoned, every
  // worker told how (ok or not). Returns how many workers must still leave.
  virtual std::size_t wind_down(bool ok) = 0;
  // The outcome goes to headnode's main (0 succeeded, 1 not); the supervisor ends.
  virtual void release(int outcome) = 0;
};

struct ControllerOptions {
  JobSpec job;
  std::chrono::milliseconds linger{0};  // the ended job's dashboard stays this long
};

class JobController {
 public:
  // A restart whose pre-flight failed tries again after this pause.
  static constexpr std::chrono::milliseconds kRetryPause{1000};
  // After the grace, how long ranks may take to report before the job goes on.
  static constexpr std::chrono::milliseconds kStopSlack{10000};
  static constexpr std::chrono::milliseconds kShutdownTimeout{10000};
  static constexpr std::size_t kMaxEvents =
      10000;  // the timeline in memory (SQLite: the newest 100,000)

  JobController() = default;
  JobController(ControllerOptions options, JobEffects* effects);

  // --- what it owns, for the views ---
  JobState state() const { return lifecycle_.state(); }
  const RestartPolicy& restarts() const { return restarts_; }
  const TaintSet& taints() const { return taints_; }
  const std::vector<std::string>& active() const { return active_; }
  // Grows with every change of active() (what a view made of it keys on).
  std::uint64_t active_changes() const { return active_changes_; }
  const std::deque<TimelineEvent>& events() const { return events_; }
  const std::string& failure() const { return failure_; }
  // What the job's time was spent on: training, and each fault's costs.
  Goodput::View goodput() const { return goodput_.view(fx_ ? fx_->unix_ms() : 0); }
  // Every attempt: started, ended, how; the job's own times.
  const AttemptBook& attempts() const { return attempts_; }
  // atlctl recover started attempt `attempt` (the stopped one ended so).
  void recovered(std::int32_t attempt);
  bool ending() const { return finalizing_; }  // ended, workers being told
  bool finished() const { return finished_; }  // workers gone; maybe lingering
  std::int32_t restart_round() const { return restart_round_; }
  bool is_active(const std::string& pod) const;

  // --- the journal ---
  // A lifecycle event; false (and nothing changed) when it does not apply.
  bool apply(JobEvent event);
  void record(const std::string& kind, const std::string& text);
  void persist();
  std::string waiting_line(std::int32_t ticks) const;
  void journal_failed(const std::string& why);  // said once: the job goes on

  // --- the course ---
  // At start: `resumed` is the durable record of an earlier head (null:
  // none). False: the head's restart spent the budget and the job failed.
  bool start(const os::JobRecord* resumed, std::size_t expected_pods);
  void all_joined();  // pending -> initializing: choose the pods, run the pre-flight
  void on_preflight_verdict(const Preflight::Verdict& verdict);
  // The pre-flight passed: user code starts (a restart as its next attempt).
  void start_command();
  // Whether the chosen pods can be made (too few untainted: the error says why).
  Status select_active();
  void on_fault(const Fault& fault);
  // Some rank of user code made progress (a line, a signal): goodput's clock.
  void on_progress();
  void on_ready_timeout(const std::string& detail);
  // The hang watch found the job hung: `culprits` the pods of the ranks to
  // blame (may be empty: every rank idle). on_hang restart: each culprit's
  // node is tainted when a spare can take its place, and the job restarts
  // (a counted fault); report: the event and nothing else.
  void on_hung(const std::vector<std::string>& culprits, const std::string& reason);
  // A rank of `pod` became a straggler (`line` says how): an event; with
  // on_straggler taint, its node is tainted at the next restart (when a
  // spare can take its place). Forgotten at each restart.
  void on_straggler(const std::string& pod, const std::string& line);
  // A restart goes on once the faulted attempt's processes are gone and
  // enough pods are back (a pre-flight, then user code).
  void maybe_relaunch();
  // `pod` left the registry (lost, silent, deleted): the policy's part of it.
  void on_pod_gone(const std::string& pod, const Fault& fault);
  // A process of user code ended as `meaning` says. False: the job is parked
  // in a debug state (the caller's stop and Ray bookkeeping follow).
  bool on_user_code_ended(const ExitMeaning& meaning);
  void on_timer(JobTimer timer, std::int32_t tag);
  // The job fails with `reason` from any live state: by `event` where the
  // state has that failing transition, else aborted (never a no-op).
  void fail(JobEvent event, const std::string& reason);
  void cancel(const std::string& why);  // a signal: ends without lingering
  void finalize();                      // tell every worker how it ended
  void on_worker_left(std::size_t still_leaving);
  void release();  // the outcome, now
  // The supervisor itself failed (an exception): the job failed with
  // `reason`, and the caller hands over the outcome at once.
  void crashed(const std::string& reason);

  // --- taints ---
  // A platform taint on `pod`'s node (a failed check, lost twice).
  void taint_platform(const std::string& pod, const std::string& reason);
  // atlctl taint -a set|remove -n NODES|all, among `machines` (the nodes
  // pods run on). A refusal changes nothing.
  std::optional<Refusal> change_taints(const std::string& action, const std::string& node_text,
                                       const std::vector<std::string>& machines);

 private:
  void begin_restart(const Fault& fault, bool counted);
  void deliver_outcome();
  bool spare_available(const std::string& node) const;
  std::string budget_text() const;

  ControllerOptions options_;
  JobEffects* fx_ = nullptr;
  std::shared_ptr<spdlog::logger> log_;
  Lifecycle lifecycle_;
  RestartPolicy restarts_;
  TaintSet taints_;
  std::vector<std::string> active_;  // pods of this attempt (ranks, or a driver's workers)
  std::uint64_t active_changes_ = 0;
  std::deque<TimelineEvent> events_;
  Goodput goodput_;
  AttemptBook attempts_;
  std::string failure_;
  std::string last_lost_node_;                     // a node lost twice in a row is tainted
  std::map<std::string, std::string> stragglers_;  // pod -> why, this attempt
  // Grows with every restart, counted or not: the tag of each restart's
  // timers, so that an older one's is moot.
  std::int32_t restart_round_ = 0;
  bool retry_pending_ = false;  // a failed pre-flight's pause before the next
  // In restarting: the pods a pre-flight passed on while the faulted
  // attempt's ranks were still stopping (the launch waits for them).
  std::optional<std::vector<std::string>> checked_;
  bool finalizing_ = false;
  bool finished_ = false;
  bool cancelled_ = false;
  bool released_ = false;
  bool store_failed_ = false;
};

}  // namespace atl::supervisor
