// Named actors on the JobSupervisor: a registry of name -> the actor a
// process of the job hosts, and the calls forwarded to it. Calls go through
// here (the hosts reach the supervisor only, so BASP routes them through this
// node anyway): the supervisor monitors each host and answers every pending
// call of one that dies, so a caller never waits past its timeout for a
// reply that cannot come. The directory itself is ActorDirectory (pure); this
// is its shell: monitors, forwarded calls, pings.
#include <nlohmann/json.hpp>
#include <variant>

#include "atl/actors/exit_words.hpp"
#include "atl/core/duration.hpp"
#include "atl/core/quote.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

void answer_all(std::map<CallId, Promise>& pending, ReplyCode code, const std::string& text) {
  for (auto& [id, p] : pending)
    if (p.pending()) p.deliver(wire(code), text);
  pending.clear();
}

Result refused(const Refusal& r) { return {wire(r.code), r.text}; }

}  // namespace

Result register_actor(Actor* self, const std::string& name, const caf::actor& handle,
                      const std::string& owner) {
  auto& st = self->state;
  std::optional<std::string> closed;
  if (is_terminal(st.state()) || st.ending())
    closed =
        "job is in state " + std::string(to_string(st.state())) + ": it has ended, no new actors";
  if (auto no = st.named.add(name, handle, static_cast<bool>(handle), owner, closed))
    return refused(*no);
  self->monitor(handle);
  st.log->info("actor {} hosted by {}", name, owner);
  return {wire(ReplyCode::ok), std::string()};
}

Result unregister_actor(Actor* self, const std::string& name) {
  auto& st = self->state;
  auto removed = st.named.remove(name);
  if (auto* no = std::get_if<Refusal>(&removed)) return refused(*no);
  auto& entry = std::get<Actors::Entry>(removed);
  self->demonitor(entry.handle);
  answer_all(entry.pending, ReplyCode::failed, "actor " + quote(name) + " was closed by its host");
  st.log->info("actor {} closed", name);
  return {wire(ReplyCode::ok), std::string()};
}

Result call_actor(Actor* self, const std::string& name, const std::string& request,
                  std::int64_t timeout_ms) {
  auto& st = self->state;
  Promise promise;
  auto called = st.named.call(name, timeout_ms, [&] {
    promise = self->make_response_promise<std::int32_t, std::string>();
    return promise;
  });
  if (auto* no = std::get_if<Refusal>(&called)) return refused(*no);
  const CallId id = std::get<CallId>(called);
  auto finish = [self, name, id](std::int32_t code, std::string text) {
    // None: the actor went meanwhile, and its callers were answered then.
    if (auto reply = self->state.named.answered(name, id)) reply->deliver(code, std::move(text));
  };
  self->request(st.named.find(name)->handle, std::chrono::milliseconds(timeout_ms),
                call_atom::value, request)
      .then([finish](std::int32_t code, std::string& reply) { finish(code, std::move(reply)); },
            [self, finish, name, timeout_ms](caf::error& err) {
              if (err == caf::sec::request_timeout) {
                finish(wire(ReplyCode::timeout), "actor " + quote(name) +
                                                     " did not answer within " +
                                                     std::to_string(timeout_ms) + " ms");
              } else {
                finish(wire(ReplyCode::failed),
                       "actor " + quote(name) + ": " + error_words(err, self->system()));
              }
            });
  return promise;
}

namespace {

void declare_dead(Actor* self, const std::string& name, const caf::actor& handle,
                  const std::string& why) {
  auto& st = self->state;
  auto entry = st.named.drop_if(name, handle);
  if (!entry) return;  // gone or replaced
  std::string line = "the host of actor " + quote(name) + " (" + entry->owner + ") is gone: " + why;
  st.log->warn("{}", line);
  self->demonitor(handle);
  answer_all(entry->pending, ReplyCode::failed, line);
}

}  // namespace

void ping_actor_hosts(Actor* self) {
  auto& st = self->state;
  const auto timeout = st.job().heartbeat.timeout;
  for (auto& [name, handle] : st.named.to_ping()) {
    self->request(handle, timeout, heartbeat_atom::value)
        .then([self, name = name, handle = handle](bool) { self->state.named.pong(name, handle); },
              [self, name = name, handle = handle, timeout](caf::error& err) {
                declare_dead(self, name, handle,
                             err == caf::sec::request_timeout
                                 ? "no answer to a heartbeat for " + format_duration(timeout)
                                 : error_words(err, self->system()));
              });
  }
}

bool on_actor_down(Actor* self, const caf::down_msg& msg) {
  auto& st = self->state;
  auto gone =
      st.named.drop_where([&](const caf::actor& handle) { return handle.address() == msg.source; });
  if (!gone) return false;
  auto& [name, entry] = *gone;
  std::string why = "the host of actor " + quote(name) + " (" + entry.owner +
                    ") is gone: " + exit_words(msg.reason, self->system());
  st.log->warn("{}", why);
  answer_all(entry.pending, ReplyCode::failed, why);
  return true;
}

std::string actors_json(const State& st) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [name, a] : st.named.entries())
    j.push_back(
        {{"name", name}, {"owner", a.owner}, {"calls", a.calls}, {"pending", a.pending.size()}});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace atl::supervisor
