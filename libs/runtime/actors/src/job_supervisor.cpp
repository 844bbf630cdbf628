// The JobSupervisor's shell: its state's birth (the Supervisor made from
// the config, with the system clock and the outbox that performs its
// effects), an agent or an executor going down, the head's own messages
// (start, timers, signals) and the behaviour joining the interfaces
// (worker_api, control_api, driver_api, terminal_api). The job's course is
// the Supervisor's (atl/supervisor/supervisor.hpp), what status shows its
// StatusView's; the supervisor_*.cpp files beside this one decode each
// interface's messages.
#include "atl/actors/job_supervisor.hpp"

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/exit_words.hpp"
#include "atl/actors/head_agent.hpp"
#include "atl/os/job_store.hpp"
#include "atl/os/journal_writer.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

// The Supervisor's effects, each performed as it is put: messages to the
// agents (by their ids), the head's own executors, the named actors' hosts,
// timers, answers to the requests kept, the sink, the journal.
class ShellOutbox final : public Outbox {
 public:
  ShellOutbox(Actor* self, std::unique_ptr<os::JournalWriter> journal)
      : self_(self), journal_(std::move(journal)) {}
  void put(Effect e) override {
    std::visit([this](auto& x) { on(x); }, e);
  }

 private:
  State& st() const { return self_->state; }
  const caf::actor* agent(AgentId id) const { return st().peers.agents.find(id); }

  void on(effect::Heartbeat& e) {
    if (const auto* a = agent(e.agent))
      self_->send<caf::message_priority::high>(*a, heartbeat_atom::value);
  }
  template <class Order>
  void on(effect::ToAgent<Order>& e) {
    if (const auto* a = agent(e.agent)) self_->send(*a, std::move(e.order));
  }
  void on(effect::Forget& e) {
    if (auto a = st().peers.agents.take(e.agent)) self_->demonitor(a);
  }
  // An ask of a peer: its answer, or why none came, back to the Supervisor.
  const caf::actor* peer(AgentId id) const { return st().peers.agents.find(id); }
  const caf::actor* peer(HostId id) const { return st().peers.hosts.find(id); }
  template <class To, class Request, class Back>
  void on(effect::Query<To, Request, Back>& e) {
    auto no = [self = self_, back = e.back, t = e.timeout](const caf::error& err) {
      self->state.sup->unanswered(
          back, {err == caf::sec::request_timeout, error_words(err, self->system()), t});
    };
    const caf::actor* to = peer(e.to);
    if (!to) return no(caf::sec::request_receiver_down);  // gone meanwhile
    self_->request(*to, e.timeout, std::move(e.request))
        .then(
            [self = self_, back = e.back](typename Request::Reply& reply) {
              self->state.sup->answered(back, std::move(reply));
            },
            no);
  }
  void on(effect::ControlReply& e) {
    // Each forwarded line is answered once.
    if (auto exec = st().peers.executors.take(e.executor))
      self_->send(exec, control_atom::value, std::move(e.line));
  }
  void on(effect::Arm& e) {
    if (e.after.count() == 0) {
      self_->send(self_, timeout_atom::value, e.kind, e.arg);
    } else if (e.urgent) {
      self_->delayed_send<caf::message_priority::high>(self_, e.after, timeout_atom::value, e.kind,
                                                       e.arg);
    } else {
      self_->delayed_send(self_, e.after, timeout_atom::value, e.kind, e.arg);
    }
  }
  void on(effect::ArmWait& e) {
    self_->delayed_send(self_, e.after, expire_atom::value, e.kind, e.waiter);
  }
  void on(effect::CheckSoon&) { self_->send(self_, check_atom::value); }
  void on(Answer& e) { deliver(self_, e.reply, wire(e.code), std::move(e.text)); }
  template <class Status>
  void on(AnswerWith<Status>& e) {
    deliver(self_, e.reply, wire(e.code), std::move(e.text), std::move(e.status));
  }
  template <class Order, std::enable_if_t<sink_order::is_order<Order>, int> = 0>
  void on(Order& e) {
    self_->send(st().config.sink, std::move(e));
  }
  void on(effect::Save& e) {
    if (journal_) journal_->save(std::move(e.record));  // on the journal's thread
  }
  void on(effect::AddEvent& e) {
    if (journal_) journal_->add_event({e.event.unix_ms, e.event.kind, e.event.text});
  }
  void on(effect::ResetJournal&) {
    if (journal_) journal_->reset();
  }
  void on(effect::Ending&) { st().config.ending->store(true); }
  void on(effect::Release& e) {
    // The durable record is complete before the head says how the job ended
    // (the one wait on the journal: a resumed head must find the final state).
    if (journal_) journal_->flush();
    settle_outcome(*st().config.outcome, e.outcome);
    self_->quit();
  }
  void on(Say& e) {
    if (e.warn) {
      supervisor_log()->warn("{}", e.text);
    } else {
      supervisor_log()->info("{}", e.text);
    }
  }
  void on(effect::CallAnswer& e) { deliver(self_, e.reply, e.code, std::move(e.text)); }
  void on(effect::Unwatch& e) {
    caf::actor handle = st().peers.hosts.take(e.host);
    // One that hosts another name is still watched.
    if (handle && !st().peers.hosts.holds(handle)) self_->demonitor(handle);
  }
  Actor* self_;
  // The JobStore's writes, in order, on a thread of their own (null: no
  // store); drained and joined when the outbox goes.
  std::unique_ptr<os::JournalWriter> journal_;
};

// An exception in a handler: the Supervisor fails the job with what cannot
// make it worse (crashed); headnode then exits 1.
caf::error on_exception(Actor* self, const std::exception_ptr& e) {
  auto& st = self->state;
  std::string reason = "internal error in the supervisor: " + describe_exception(e);
  supervisor_log()->critical("job {} failed: {}", st.job().job_id, reason);
  st.sup->crashed(reason);
  settle_outcome(*st.config.outcome, 1);
  return caf::exit_reason::unhandled_exception;
}

}  // namespace

const std::shared_ptr<spdlog::logger>& supervisor_log() {
  static const auto log = component_logger("supervisor");
  return log;
}

namespace {

void on_node_down(Actor* self, const caf::down_msg& msg) {
  auto& st = self->state;
  auto went = [&](const caf::actor& a) { return a.address() == msg.source; };
  // A driver's connection (maybe also a named actor's host's process).
  for (OwnerId gone : st.peers.owners.take_all(went)) st.sup->owner_gone(gone);
  bool was_host = false;
  for (HostId id : st.peers.hosts.take_all(went))
    was_host = st.sup->host_down(id, exit_words(msg.reason, self->system())) || was_host;
  if (was_host) return;
  if (msg.source == st.config.sink.address())
    return st.sup->head_failed("the head's log writer ended (" +
                               exit_words(msg.reason, self->system()) + ")");
  for (AgentId gone : st.peers.agents.take_all(went))
    st.sup->agent_down(gone, exit_words(msg.reason, self->system()));
}

}  // namespace

namespace {

caf::behavior job_supervisor(Actor* self, SupervisorConfig config) {
  auto& st = self->state;
  st.config = std::move(config);
  std::unique_ptr<os::JournalWriter> journal;
  if (st.config.store) {
    // SQLite off the scheduler's threads; its errors come back as a message.
    caf::actor_addr me = self->address();
    journal = std::make_unique<os::JournalWriter>(
        st.config.store, st.config.settings.job.job_id, [me](const std::string& why) {
          if (auto supervisor = caf::actor_cast<caf::actor>(me))
            caf::anon_send(supervisor, journal_error_atom::value, why);
        });
  }
  static const SystemClock clock;
  st.outbox = std::make_unique<ShellOutbox>(self, std::move(journal));
  // The head pod's own processes run under an agent of their own, as a pod's.
  caf::actor head =
      spawn_head_agent(self->system(), {head_pod_name(st.config.settings.job.job_id),
                                        st.config.sink, self, st.config.settings.job.grace});
  self->monitor(head);
  st.sup = std::make_unique<Supervisor>(std::move(st.config.settings), clock, *st.outbox,
                                        st.peers.agents.add(head));
  self->set_down_handler([self](const caf::down_msg& msg) { on_node_down(self, msg); });
  self->set_exception_handler(
      [self](caf::scheduled_actor*, std::exception_ptr& e) { return on_exception(self, e); });
  self->monitor(st.config.sink);
  self->send(st.config.sink, watch_atom::value);

  // The head's own messages (its start, timers, signals); the workers' and
  // executors' (worker_api), atlctl's (control_api) and the drivers'
  // (driver_api) in their own files.
  return caf::message_handler{
      [self](start_atom, std::uint16_t port) {
        auto& st = self->state;
        supervisor_log()->info("job {} ({} mode) waiting for {} workers", st.job().job_id,
                               to_string(st.job().mode),
                               st.sup->pods().registry().expected().size());
        st.sup->start(st.sup->settings().advertised_host + ":" + std::to_string(port),
                      st.config.resumed.get());
      },
      [self](timeout_atom, std::int32_t kind, std::int32_t arg) {
        self->state.sup->timer(kind, arg);
      },
      [self](journal_error_atom, const std::string& why) { self->state.sup->journal_failed(why); },
      [self](expire_atom, std::int32_t kind, WaiterId waiter) {
        self->state.sup->wait_expired(kind, waiter);
      },
      [self](cancel_atom, const std::string& why) { self->state.sup->cancel(why); },
      [self](disk_error_atom, const std::string& what) {
        self->state.sup->head_failed("logs are incomplete: " + what);
      },
  }
      .or_else(worker_api(self))
      .or_else(control_api(self))
      .or_else(driver_api(self))
      .or_else(terminal_api(self));
}

}  // namespace

}  // namespace atl::supervisor

namespace atl {

void settle_outcome(std::promise<int>& outcome, int code) {
  try {
    outcome.set_value(code);
  } catch (const std::future_error&) {
    // Already settled: the first word stands.
  }
}

caf::actor spawn_job_supervisor(caf::actor_system& sys, SupervisorConfig config) {
  return sys.spawn(supervisor::job_supervisor, std::move(config));
}

}  // namespace atl
