// Named actors on the JobSupervisor: a registry of name -> the actor a
// process of the job hosts, and the calls forwarded to it. Calls go through
// here (the hosts reach the supervisor only, so BASP routes them through this
// node anyway): the supervisor monitors each host and answers every pending
// call of one that dies, so a caller never waits past its timeout for a
// reply that cannot come.
#include <nlohmann/json.hpp>

#include "atl/core/duration.hpp"
#include "atl/core/quote.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

constexpr size_t kMaxNameLength = 128;

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (unsigned char c : name)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}

void answer_pending(State::NamedActor& a, std::int32_t code, const std::string& text) {
  for (auto& [id, p] : a.pending)
    if (p.pending()) p.deliver(code, text);
  a.pending.clear();
}

}  // namespace

Result register_actor(Actor* self, const std::string& name, const caf::actor& handle,
                      const std::string& owner) {
  auto& st = self->state;
  if (!valid_name(name))
    return {wire(ReplyCode::usage),
            "bad actor name " + quote(name) + " (1 to 128 printable characters, no spaces)"};
  if (!handle) return {wire(ReplyCode::usage), "no actor given for " + quote(name)};
  if (is_terminal(st.state()) || st.finalizing)
    return {wire(ReplyCode::refused), "job is in state " + std::string(to_string(st.state())) +
                                          ": it has ended, no new actors"};
  auto it = st.named.find(name);
  if (it != st.named.end())
    return {wire(ReplyCode::refused), "an actor named " + quote(name) +
                                          " exists already (hosted by " + it->second.owner + ")"};
  self->monitor(handle);
  st.named[name] = {handle, owner, 0, {}};
  st.log->info("actor {} hosted by {}", name, owner);
  return {wire(ReplyCode::ok), std::string()};
}

Result unregister_actor(Actor* self, const std::string& name) {
  auto& st = self->state;
  auto it = st.named.find(name);
  if (it == st.named.end()) return {wire(ReplyCode::usage), "no actor named " + quote(name)};
  self->demonitor(it->second.handle);
  answer_pending(it->second, 1, "actor " + quote(name) + " was closed by its host");
  st.named.erase(it);
  st.log->info("actor {} closed", name);
  return {wire(ReplyCode::ok), std::string()};
}

Result call_actor(Actor* self, const std::string& name, const std::string& request,
                  std::int64_t timeout_ms) {
  auto& st = self->state;
  auto it = st.named.find(name);
  if (it == st.named.end()) return {wire(ReplyCode::usage), "no actor named " + quote(name)};
  if (timeout_ms <= 0) return {wire(ReplyCode::usage), "a call needs a timeout above 0"};
  auto promise = self->make_response_promise<std::int32_t, std::string>();
  const std::int64_t id = st.next_call++;
  it->second.pending.emplace(id, promise);
  ++it->second.calls;
  auto finish = [self, name, id](std::int32_t code, std::string text) {
    auto a = self->state.named.find(name);
    if (a == self->state.named.end()) return;  // answered when it went
    auto p = a->second.pending.find(id);
    if (p == a->second.pending.end()) return;
    p->second.deliver(code, std::move(text));
    a->second.pending.erase(p);
  };
  self->request(it->second.handle, std::chrono::milliseconds(timeout_ms), call_atom::value, request)
      .then([finish](std::int32_t code, std::string& reply) { finish(code, std::move(reply)); },
            [self, finish, name, timeout_ms](caf::error& err) {
              if (err == caf::sec::request_timeout) {
                finish(wire(ReplyCode::timeout), "actor " + quote(name) +
                                                     " did not answer within " +
                                                     std::to_string(timeout_ms) + " ms");
              } else {
                finish(wire(ReplyCode::failed),
                       "actor " + quote(name) + ": " + self->system().render(err));
              }
            });
  return promise;
}

namespace {

void declare_dead(Actor* self, const std::string& name, const caf::actor& handle,
                  const std::string& why) {
  auto& st = self->state;
  auto it = st.named.find(name);
  if (it == st.named.end() || it->second.handle != handle) return;  // gone or replaced
  std::string line =
      "the host of actor " + quote(name) + " (" + it->second.owner + ") is gone: " + why;
  st.log->warn("{}", line);
  self->demonitor(handle);
  answer_pending(it->second, 1, line);
  st.named.erase(it);
}

}  // namespace

void ping_actor_hosts(Actor* self) {
  auto& st = self->state;
  const auto timeout = st.job().heartbeat.timeout;
  for (auto& [name, a] : st.named) {
    if (a.pinging) continue;
    a.pinging = true;
    caf::actor handle = a.handle;
    self->request(handle, timeout, heartbeat_atom::value)
        .then(
            [self, name = name, handle](bool) {
              auto it = self->state.named.find(name);
              if (it != self->state.named.end() && it->second.handle == handle)
                it->second.pinging = false;
            },
            [self, name = name, handle, timeout](caf::error& err) {
              declare_dead(self, name, handle,
                           err == caf::sec::request_timeout
                               ? "no answer to a heartbeat for " + format_duration(timeout)
                               : self->system().render(err));
            });
  }
}

bool on_actor_down(Actor* self, const caf::down_msg& msg) {
  auto& st = self->state;
  for (auto it = st.named.begin(); it != st.named.end(); ++it) {
    if (it->second.handle.address() != msg.source) continue;
    std::string why = "the host of actor " + quote(it->first) + " (" + it->second.owner +
                      ") is gone: " + self->system().render(msg.reason);
    st.log->warn("{}", why);
    answer_pending(it->second, 1, why);
    st.named.erase(it);
    return true;
  }
  return false;
}

std::string actors_json(const State& st) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [name, a] : st.named)
    j.push_back(
        {{"name", name}, {"owner", a.owner}, {"calls", a.calls}, {"pending", a.pending.size()}});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace atl::supervisor
