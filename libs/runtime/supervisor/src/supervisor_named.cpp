// What the job's own processes and people reach through the head, on the
// Supervisor: the named actors and the web terminals.
//
// Named actors: a directory of name -> the host a process of the job
// registered (NamedActors), the calls forwarded to it and the callers
// waiting. Calls go through the head (the hosts reach the supervisor only,
// so they are routed through it anyway): a host that dies, closes or stops
// answering its ping has every pending call answered at once, so no caller
// waits past its timeout for a reply that cannot come.
//
// Web terminals: the TerminalBook says yes or why not, the pod's agent
// starts the shell, the timeline says who opened it and when it closed. The
// keystrokes never pass through the head.
#include "atl/core/duration.hpp"
#include "atl/core/quote.hpp"
#include "atl/supervisor/supervisor.hpp"

namespace atl::supervisor {

std::optional<Refusal> Supervisor::host_actor(const std::string& name, HostId host, bool has_host,
                                              const std::string& owner) {
  std::optional<std::string> closed;
  if (is_terminal(state()) || controller_.ending())
    closed = "job is in state " + std::string(to_string(state())) + ": it has ended, no new actors";
  if (auto no = named_.add(name, host, has_host, owner, closed)) return no;
  out_.put(Say{false, "actor " + name + " hosted by " + owner});
  return std::nullopt;
}

std::optional<Refusal> Supervisor::close_actor(const std::string& name) {
  auto removed = named_.remove(name);
  if (auto* no = std::get_if<Refusal>(&removed)) return *no;
  auto& entry = std::get<NamedActors::Entry>(removed);
  out_.put(effect::Unwatch{entry.handle});
  answer_callers(entry, ReplyCode::failed, "actor " + quote(name) + " was closed by its host");
  out_.put(Say{false, "actor " + name + " closed"});
  return std::nullopt;
}

std::optional<Refusal> Supervisor::call_actor(const std::string& name, const std::string& request,
                                              std::int64_t timeout_ms,
                                              const std::function<ReplyId()>& keep) {
  auto called = named_.call(name, timeout_ms, keep);
  if (auto* no = std::get_if<Refusal>(&called)) return *no;
  out_.put(effect::CallHost{named_.find(name)->handle, name, std::get<CallId>(called), request,
                            Millis{timeout_ms}});
  return std::nullopt;
}

void Supervisor::actor_answered(const std::string& name, CallId call, std::int32_t code,
                                const std::string& text) {
  // None: the actor went meanwhile, and its callers were answered then.
  if (auto reply = named_.answered(name, call)) out_.put(effect::CallAnswer{*reply, code, text});
}

void Supervisor::actor_not_answered(const std::string& name, CallId call, bool timed_out,
                                    const std::string& why) {
  auto reply = named_.answered(name, call);
  if (!reply) return;
  out_.put(Answer{*reply, timed_out ? ReplyCode::timeout : ReplyCode::failed,
                  "actor " + quote(name) + (timed_out ? " did not answer within " : ": ") + why});
}

void Supervisor::ping_hosts() {
  for (auto& [name, host] : named_.to_ping())
    out_.put(effect::PingHost{host, name, settings_.job.heartbeat.timeout});
}

void Supervisor::host_answered(const std::string& name, HostId host) { named_.pong(name, host); }

void Supervisor::host_silent(const std::string& name, HostId host, const std::string& why) {
  auto entry = named_.drop_if(name, host);
  if (!entry) return;  // gone or replaced
  const std::string line =
      "the host of actor " + quote(name) + " (" + entry->owner + ") is gone: " + why;
  out_.put(Say{true, line});
  out_.put(effect::Unwatch{host});
  answer_callers(*entry, ReplyCode::failed, line);
}

bool Supervisor::host_down(HostId host, const std::string& words) {
  auto gone = named_.drop_where([&](HostId h) { return h == host; });
  if (!gone) return false;
  auto& [name, entry] = *gone;
  const std::string line =
      "the host of actor " + quote(name) + " (" + entry.owner + ") is gone: " + words;
  out_.put(Say{true, line});
  answer_callers(entry, ReplyCode::failed, line);
  return true;
}

void Supervisor::answer_callers(NamedActors::Entry& entry, ReplyCode code, const std::string& why) {
  for (auto& [call, reply] : entry.pending) out_.put(Answer{reply, code, why});
  entry.pending.clear();
}

std::variant<Refusal, TerminalOpening> Supervisor::open_terminal(const std::string& pod,
                                                                 const std::string& who) {
  if (is_terminal(state()) || controller_.ending())
    return Refusal{ReplyCode::refused,
                   "job is in state " + std::string(to_string(state())) +
                       ": it has ended and its pods are gone (a terminal opens into the pods "
                       "of a job that runs)"};
  const auto agent = agent_of(pod);
  auto record = terminals_.open(pod, agent.has_value(), who, clock_.now());
  if (!record) return Refusal{ReplyCode::refused, record.error()};
  return TerminalOpening{record->id, *agent};
}

void Supervisor::terminal_started(TerminalId id, bool ok) {
  if (!ok) {
    terminals_.close(id);
    return;
  }
  if (const TerminalRecord* r = terminals_.find(id))
    controller_.record("terminal", "terminal " + std::to_string(id.value) + " opened on pod " +
                                       r->pod + " by " + r->who);
}

void Supervisor::terminal_closed(TerminalId id, const std::string& why) {
  auto record = terminals_.close(id);
  if (!record) return;
  controller_.record("terminal", "terminal " + std::to_string(id.value) + " on pod " + record->pod +
                                     " closed after " +
                                     terminal_duration(clock_.now() - record->opened) + ": " + why);
}

}  // namespace atl::supervisor
