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

std::optional<Refusal> Supervisor::on(const ActorClose& request) {
  const std::string& name = request.name;
  auto removed = named_.remove(name);
  if (auto* no = std::get_if<Refusal>(&removed)) return *no;
  auto& entry = std::get<NamedActors::Entry>(removed);
  out_.put(effect::Unwatch{entry.handle});
  answer_callers(entry, ReplyCode::failed, "actor " + quote(name) + " was closed by its host");
  out_.put(Say{false, "actor " + name + " closed"});
  return std::nullopt;
}

std::optional<Refusal> Supervisor::on(const ActorCall& request, const Keep& keep) {
  const std::string& name = request.name;
  auto called = named_.call(name, request.timeout_ms, keep);
  if (auto* no = std::get_if<Refusal>(&called)) return *no;
  out_.put(effect::CallHost{named_.find(name)->handle,
                            HostCall{request.bytes},
                            Millis{request.timeout_ms},
                            {name, std::get<CallId>(called)}});
  return std::nullopt;
}

void Supervisor::answered(const CallBack& back, const HostReply& reply) {
  // None: the actor went meanwhile, and its callers were answered then.
  if (auto to = named_.answered(back.name, back.call))
    out_.put(effect::CallAnswer{*to, reply.code, reply.bytes});
}

void Supervisor::unanswered(const CallBack& back, const NoAnswer& why) {
  auto to = named_.answered(back.name, back.call);
  if (!to) return;
  out_.put(Answer{
      *to, why.timed_out ? ReplyCode::timeout : ReplyCode::failed,
      "actor " + quote(back.name) +
          (why.timed_out ? " did not answer within " + std::to_string(why.timeout.count()) + " ms"
                         : ": " + why.words)});
}

void Supervisor::ping_hosts() {
  for (auto& [name, host] : named_.to_ping())
    out_.put(effect::PingHost{host, {}, settings_.job.heartbeat.timeout, {name, host}});
}

void Supervisor::answered(const PingBack& back, bool) { named_.pong(back.name, back.host); }

void Supervisor::unanswered(const PingBack& back, const NoAnswer& why) {
  auto entry = named_.drop_if(back.name, back.host);
  if (!entry) return;  // gone or replaced
  const std::string line =
      "the host of actor " + quote(back.name) + " (" + entry->owner + ") is gone: " +
      (why.timed_out ? "no answer to a heartbeat for " + format_duration(why.timeout) : why.words);
  out_.put(Say{true, line});
  out_.put(effect::Unwatch{back.host});
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
