// The C API over atl's actors: each client owns a CAF actor system connected
// to the job's supervisor; each call is one request with a timeout, made by a
// scoped actor of its own (so calls from several threads never share one).
#include "atl.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/exit_words.hpp"
#include "atl/actors/messages.hpp"
#include "atl/core/call_gate.hpp"
#include "atl/core/host_port.hpp"
#include "atl/core/log_stream.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/os/tls_credentials.hpp"

struct atl_status {
  atl_code code = ATL_OK;
  std::string message;
};

struct atl_reply {
  std::int32_t code = 0;
  std::string data;
};

// A hosted actor: an event-based actor on CAF's scheduler is its mailbox; a
// thread of its own runs the handler (never CAF's threads) and hands each
// reply back to the mailbox, which answers the caller.
struct atl_actor {
  struct Work {
    std::int64_t serial = 0;
    std::string request;
  };
  atl_client* client = nullptr;
  std::string name;
  caf::actor handle;
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Work> queue;
  bool closing = false;
  std::thread worker;
};

// Work for a client's bridge actor, run in its context. (Local messages only.)
using atl_bridge_job = std::shared_ptr<std::function<void(caf::event_based_actor*)>>;
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(atl_bridge_job)

struct atl_client {
  std::unique_ptr<atl::AtlSystemConfig> config;
  std::unique_ptr<caf::actor_system> system;
  caf::actor supervisor;
  // Every request and spawn goes through this actor: callers' threads only
  // anon_send to it. (CAF 0.17: an actor spawned, or a scoped_actor made, on
  // a thread that then outlives the call keeps ~actor_system waiting until
  // that thread exits: a driver's idle thread pool hung its shutdown.)
  caf::actor bridge;
  std::string address;
  // The actors this client hosts and no one closed yet: atl_disconnect stops
  // them (a live one would keep ~actor_system waiting for ever).
  std::mutex hosted_mutex;
  std::set<atl_actor*> hosted;
  // Every call holds a pass from its first read of the client to its last;
  // atl_disconnect frees the client only once no pass is held.
  atl::CallGate gate;
  // Requests waiting for their answer: atl_interrupt (and so atl_disconnect)
  // fails them at once.
  std::mutex calls_mutex;
  std::map<std::uint64_t, std::function<void()>> in_flight;  // id -> fail it
  std::uint64_t next_call = 0;
  bool closing = false;
};

namespace {

// How long a plain request may take; waits (pg_wait) add their own timeout.
constexpr auto kRequestTimeout = std::chrono::seconds(15);

atl_status* make_status(atl_code code, std::string message) {
  auto* s = new (std::nothrow) atl_status;
  if (!s) return nullptr;  // out of memory: nothing better can be said
  s->code = code;
  s->message = std::move(message);
  return s;
}

char* copy_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

// Runs `body`; an exception becomes ATL_INTERNAL (none may cross into C).
template <class Body>
atl_status* guarded(const char* call, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return make_status(ATL_INTERNAL, std::string(call) + ": " + e.what());
  } catch (...) {
    return make_status(ATL_INTERNAL, std::string(call) + ": unknown exception");
  }
}

atl_status* disconnected(const char* call) {
  return make_status(ATL_UNREACHABLE,
                     std::string(call) + ": the client disconnected (atl_disconnect)");
}

// A call on `c`: runs `body` holding one of the client's passes (see
// atl_client::gate), so the client outlives everything the call reads of it.
template <class Body>
atl_status* on_client(atl_client* c, const char* call, Body&& body) {
  if (!c) return make_status(ATL_USAGE, std::string(call) + ": client is NULL");
  return guarded(call, [&]() -> atl_status* {
    auto pass = c->gate.enter();
    if (!pass) return disconnected(call);
    return body();
  });
}

// Runs `job` in the bridge actor's context; its result comes back through
// the promise the job fulfils.
void on_bridge(atl_client* c, std::function<void(caf::event_based_actor*)> job) {
  caf::anon_send(c->bridge,
                 std::make_shared<std::function<void(caf::event_based_actor*)>>(std::move(job)));
}

// One request to the supervisor (or `to`) from any thread, answered with Ts...
template <class... Ts>
caf::expected<std::tuple<Ts...>> call_supervisor(atl_client* c, caf::message msg,
                                                 std::chrono::milliseconds timeout,
                                                 caf::actor to = {}) {
  using Answer = caf::expected<std::tuple<Ts...>>;
  auto done = std::make_shared<std::promise<Answer>>();
  // The answer, the disconnect or the timeout: whichever comes first is kept.
  auto answer = [done](Answer value) {
    try {
      done->set_value(std::move(value));
    } catch (const std::future_error&) {  // answered already
    }
  };
  auto future = done->get_future();
  std::uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(c->calls_mutex);
    if (c->closing) return caf::make_error(caf::sec::request_receiver_down);
    id = ++c->next_call;
    c->in_flight.emplace(id,
                         [answer] { answer(caf::make_error(caf::sec::request_receiver_down)); });
  }
  if (!to) to = c->supervisor;
  on_bridge(
      c, [to = std::move(to), msg = std::move(msg), timeout, answer](caf::event_based_actor* self) {
        self->request(to, timeout, msg)
            .then([answer](Ts&... xs) { answer(std::make_tuple(std::move(xs)...)); },
                  [answer](caf::error& err) { answer(std::move(err)); });
      });
  // CAF's own timeout answers first; this bound only guards a stuck system.
  Answer result = future.wait_for(timeout + std::chrono::seconds(5)) == std::future_status::ready
                      ? future.get()
                      : Answer{caf::make_error(caf::sec::request_timeout)};
  {
    std::lock_guard<std::mutex> lock(c->calls_mutex);
    c->in_flight.erase(id);
  }
  return result;
}

atl_status* unreachable(atl_client* c, const char* call, const caf::error& err) {
  if (err == caf::sec::request_receiver_down) {
    std::lock_guard<std::mutex> lock(c->calls_mutex);
    if (c->closing) return disconnected(call);
  }
  return make_status(ATL_UNREACHABLE, std::string(call) + ": the supervisor at " + c->address +
                                          " did not answer: " + atl::error_words(err, *c->system));
}

// Sends `request`, expects (code, text): the supervisor's answer to commands.
// `wait` is how long the answer may take beyond the usual request timeout.
// A coded answer that is not ok, as the caller's status. The supervisor's
// ReplyCode is atl_code (checked at compile time below); a number no code
// has is the peer's bug, not a failure of the request.
atl_status* refusal(const char* call, std::int32_t code, const std::string& text) {
  auto known = atl::reply_code_from_wire(code);
  if (!known)
    return make_status(ATL_INTERNAL, std::string(call) + ": the supervisor answered code " +
                                         std::to_string(code) + ": " + text);
  return make_status(static_cast<atl_code>(atl::wire(*known)), text);
}

atl_status* ask(atl_client* c, const char* call, caf::message request,
                std::chrono::milliseconds wait, std::string* text_out, caf::actor to = {}) {
  auto answer = call_supervisor<std::int32_t, std::string>(c, std::move(request),
                                                           kRequestTimeout + wait, std::move(to));
  if (!answer) return unreachable(c, call, answer.error());
  auto& [code, text] = *answer;
  if (code == 0) {
    if (text_out) *text_out = std::move(text);
    return nullptr;
  }
  return refusal(call, code, text);
}

// Sends `request`, expects a plain string (info, cluster state).
atl_status* ask_text(atl_client* c, const char* call, caf::message request, std::string* text_out) {
  auto answer = call_supervisor<std::string>(c, std::move(request), kRequestTimeout);
  if (!answer) return unreachable(c, call, answer.error());
  *text_out = std::move(std::get<0>(*answer));
  return nullptr;
}

// A task request answered with (code, line, TaskStatus): the status, or the
// refusal as a status of its own.
atl_status* ask_task(atl_client* c, const char* call, caf::message request,
                     std::chrono::milliseconds wait, atl::TaskStatus* out) {
  auto answer = call_supervisor<std::int32_t, std::string, atl::TaskStatus>(c, std::move(request),
                                                                            kRequestTimeout + wait);
  if (!answer) return unreachable(c, call, answer.error());
  auto& [code, text, status] = *answer;
  if (code == 0) {
    *out = std::move(status);
    return nullptr;
  }
  return refusal(call, code, text);
}

// The task once it ended (task_wait); ATL_TIMEOUT while it still runs.
atl_status* wait_for_task(atl_client* c, const char* call, int32_t task, int64_t timeout_ms,
                          atl::TaskStatus& t) {
  if (timeout_ms < 0) return make_status(ATL_USAGE, std::string(call) + ": timeout_ms is negative");
  if (auto* s = ask_task(c, call, caf::make_message(atl::TaskWait{task, timeout_ms}),
                         std::chrono::milliseconds(timeout_ms), &t))
    return s;
  if (!t.done)
    return make_status(ATL_TIMEOUT, "task " + std::to_string(task) + " still runs after " +
                                        std::to_string(timeout_ms) + " ms");
  return nullptr;
}

atl_status* text_out(const char* call, const std::string& text, char** out) {
  if (!out) return nullptr;
  *out = copy_string(text);
  if (!*out) return make_status(ATL_INTERNAL, std::string(call) + ": out of memory");
  return nullptr;
}

// Ends the worker after its current call (whose reply is then on its way).
void stop_worker(atl_actor* a) {
  {
    std::lock_guard<std::mutex> lock(a->mutex);
    a->closing = true;
  }
  a->wake.notify_one();
  if (a->worker.joinable()) a->worker.join();
}

// Ends the worker (after its current call) and the mailbox.
void stop_actor(atl_actor* a) {
  stop_worker(a);
  caf::anon_send_exit(a->handle, caf::exit_reason::user_shutdown);
}

}  // namespace

extern "C" {

int atl_api_version(void) { return ATL_API_VERSION; }

// atl_code is the supervisor's ReplyCode: one set of numbers everywhere.
static_assert(ATL_OK == atl::wire(atl::ReplyCode::ok));
static_assert(ATL_FAILED == atl::wire(atl::ReplyCode::failed));
static_assert(ATL_USAGE == atl::wire(atl::ReplyCode::usage));
static_assert(ATL_REFUSED == atl::wire(atl::ReplyCode::refused));
static_assert(ATL_UNREACHABLE == atl::wire(atl::ReplyCode::unreachable));
static_assert(ATL_TIMEOUT == atl::wire(atl::ReplyCode::timeout));
static_assert(ATL_INTERNAL == atl::wire(atl::ReplyCode::internal));

const char* atl_code_name(atl_code code) {
  auto known = atl::reply_code_from_wire(static_cast<std::int32_t>(code));
  return known ? atl::to_string(*known) : "unknown";
}

atl_code atl_status_code(const atl_status* status) { return status ? status->code : ATL_OK; }

const char* atl_status_message(const atl_status* status) {
  return status ? status->message.c_str() : "";
}

void atl_status_free(atl_status* status) { delete status; }

void atl_free(char* text) { std::free(text); }

int atl_progress(void) {
  const char* path = std::getenv("ATL_PROGRESS_FILE");
  if (!path || !*path) return 0;
  if (::utimensat(AT_FDCWD, path, nullptr, 0) == 0) return 1;
  if (errno != ENOENT) return -1;
  // Removed meanwhile (a tmp cleaner): made again, never through a link.
  int fd = ::open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  ::close(fd);
  return 1;
}

atl_status* atl_connect(const char* address, const char* tls_dir, int insecure, atl_client** out) {
  return guarded("atl_connect", [&]() -> atl_status* {
    if (!out) return make_status(ATL_USAGE, "atl_connect: out is NULL");
    *out = nullptr;
    std::string where = address ? address : "";
    if (where.empty()) {
      const char* env = std::getenv("ATL_ADDRESS");
      if (!env || !*env)
        return make_status(ATL_USAGE,
                           "atl_connect: no address given and $ATL_ADDRESS is not set (it is in "
                           "a job's driver and ranks)");
      where = env;
    }
    auto hp = atl::parse_host_port(where);
    if (!hp) return make_status(ATL_USAGE, "atl_connect: address: " + hp.error());
    auto tls = atl::os::resolve_tls_credentials(tls_dir ? tls_dir : "", insecure != 0);
    if (!tls) return make_status(ATL_USAGE, "atl_connect: " + tls.error());
    auto c = std::make_unique<atl_client>();
    c->address = hp->to_string();
    c->config = std::make_unique<atl::AtlSystemConfig>(*tls);
    // Made, connected and bridged from a thread that ends here (see
    // atl_client): the actor system's own actors are spawned where it is
    // made, and made on the caller's thread they held atl_disconnect from any
    // other thread until that one exited (a driver's shutdown() from a
    // worker thread never returned).
    auto made = std::async(std::launch::async, [&]() -> caf::expected<caf::actor> {
      c->system = std::make_unique<caf::actor_system>(*c->config);
      auto found = atl::connect_actor(*c->system, hp->host, hp->port);
      if (!found) return found;
      c->bridge = c->system->spawn([](caf::event_based_actor* self) -> caf::behavior {
        return {[self](atl_bridge_job& job) { (*job)(self); }};
      });
      return found;
    });
    auto found = made.get();
    if (!found)
      return make_status(
          ATL_UNREACHABLE,
          "atl_connect: cannot reach the supervisor at " + c->address + ": " +
              atl::describe_connect_error(*c->system, found.error(), hp->host, hp->port));
    c->supervisor = *found;
    *out = c.release();
    return nullptr;
  });
}

void atl_interrupt(atl_client* client) {
  if (!client) return;
  try {
    client->gate.close();  // later calls are refused
    // Requests in flight fail now ("disconnected"); their calls return at once.
    std::lock_guard<std::mutex> lock(client->calls_mutex);
    client->closing = true;
    for (auto& [id, fail] : client->in_flight) fail();
  } catch (...) {
    // Nothing may cross into C.
  }
}

void atl_disconnect(atl_client* client) {
  if (!client) return;
  try {
    atl_interrupt(client);
    // Actors still hosted stop here (their handler's current call ends
    // first); the dropped connection unregisters them at the supervisor.
    std::set<atl_actor*> hosted;
    {
      std::lock_guard<std::mutex> lock(client->hosted_mutex);
      hosted.swap(client->hosted);
    }
    for (atl_actor* a : hosted) {
      stop_actor(a);
      a->client = nullptr;
    }
    // Every call that entered has returned (a handler's own calls failed
    // the same way): nothing reads the client after this.
    client->gate.wait_idle();
    if (client->bridge) caf::anon_send_exit(client->bridge, caf::exit_reason::user_shutdown);
    client->bridge = caf::actor{};
    client->supervisor = caf::actor{};
    delete client;
  } catch (...) {
    // Nothing may cross into C; the process is ending the connection anyway.
  }
}

atl_status* atl_job_info(atl_client* client, char** json_out) {
  return on_client(client, "atl_job_info", [&]() -> atl_status* {
    std::string text;
    if (auto* s = ask_text(client, "atl_job_info", caf::make_message(atl::info_atom::value), &text))
      return s;
    return text_out("atl_job_info", text, json_out);
  });
}

atl_status* atl_cluster_state(atl_client* client, char** json_out) {
  return on_client(client, "atl_cluster_state", [&]() -> atl_status* {
    std::string text;
    if (auto* s = ask_text(client, "atl_cluster_state", caf::make_message(atl::cluster_atom::value),
                           &text))
      return s;
    return text_out("atl_cluster_state", text, json_out);
  });
}

atl_status* atl_pg_create(atl_client* client, const char* name, const char* strategy,
                          const char* bundles_json, int64_t timeout_ms, int64_t* id_out) {
  return atl_pg_create_json(client, name, strategy, bundles_json, timeout_ms, id_out, nullptr);
}

atl_status* atl_pg_create_json(atl_client* client, const char* name, const char* strategy,
                               const char* bundles_json, int64_t timeout_ms, int64_t* id_out,
                               char** json_out) {
  return on_client(client, "atl_pg_create", [&]() -> atl_status* {
    if (!strategy || !bundles_json)
      return make_status(ATL_USAGE, "atl_pg_create: strategy and bundles_json are required");
    std::string text;
    if (auto* s = ask(client, "atl_pg_create",
                      caf::make_message(
                          atl::GroupRequest{name ? name : "", strategy, bundles_json, timeout_ms}),
                      std::chrono::milliseconds(0), &text))
      return s;
    // The group as JSON is what the caller gets (json_out); its id is read
    // from it as a field, not found by searching the text.
    auto group = nlohmann::json::parse(text, nullptr, false);
    if (group.is_discarded() || !group.is_object() || !group.contains("id") ||
        !group["id"].is_number_integer())
      return make_status(ATL_INTERNAL, "atl_pg_create: the answer has no id: " + text);
    if (id_out) *id_out = group["id"].get<std::int64_t>();
    return text_out("atl_pg_create", text, json_out);
  });
}

atl_status* atl_pg_wait(atl_client* client, int64_t id, int64_t timeout_ms, char** json_out) {
  return on_client(client, "atl_pg_wait", [&]() -> atl_status* {
    if (timeout_ms < 0) return make_status(ATL_USAGE, "atl_pg_wait: timeout_ms is negative");
    std::string text;
    // Still pending at the deadline: the supervisor answers ReplyCode::timeout.
    if (auto* s = ask(client, "atl_pg_wait", caf::make_message(atl::GroupWait{id, timeout_ms}),
                      std::chrono::milliseconds(timeout_ms), &text))
      return s;
    return text_out("atl_pg_wait", text, json_out);
  });
}

atl_status* atl_pg_remove(atl_client* client, int64_t id) {
  return on_client(client, "atl_pg_remove", [&]() -> atl_status* {
    return ask(client, "atl_pg_remove", caf::make_message(atl::GroupRemove{id}),
               std::chrono::milliseconds(0), nullptr);
  });
}

atl_status* atl_disown(atl_client* client, int group, int64_t id) {
  return on_client(client, "atl_disown", [&]() -> atl_status* {
    return ask(client, "atl_disown",
               caf::make_message(atl::disown_atom::value, group != 0, std::int64_t{id}),
               std::chrono::milliseconds(0), nullptr);
  });
}

namespace {

atl_status* start_task(atl_client* client, const char* what, atl::TaskRequest request,
                       const char* command, const char* const* env, int32_t* task_out) {
  return on_client(client, what, [&]() -> atl_status* {
    if (!command) return make_status(ATL_USAGE, std::string(what) + ": command is NULL");
    request.command = command;
    for (const char* const* e = env; e && *e; ++e) request.env.emplace_back(*e);
    atl::TaskStatus started;
    if (auto* s = ask_task(client, what, caf::make_message(std::move(request)),
                           std::chrono::seconds(30), &started))
      return s;
    if (started.task < 1)
      return make_status(ATL_INTERNAL, std::string(what) + ": the answer names no task");
    if (task_out) *task_out = started.task;
    return nullptr;
  });
}

atl::TaskRequest task_request(int64_t group, int32_t bundle, const char* pod,
                              const char* working_dir) {
  atl::TaskRequest r;
  r.group = group;
  r.bundle = bundle;
  r.pod = pod ? pod : "";
  r.working_dir = working_dir ? working_dir : "";
  return r;
}

}  // namespace

atl_status* atl_task_start(atl_client* client, int64_t group, int32_t bundle, const char* pod,
                           const char* command, const char* const* env, const char* working_dir,
                           int32_t* task_out) {
  return start_task(client, "atl_task_start", task_request(group, bundle, pod, working_dir),
                    command, env, task_out);
}

atl_status* atl_task_start_detached(atl_client* client, int64_t group, int32_t bundle,
                                    const char* pod, const char* command, const char* const* env,
                                    const char* working_dir, int32_t restarts, int own_group,
                                    int32_t* task_out) {
  auto request = task_request(group, bundle, pod, working_dir);
  request.detached = true;
  request.restarts = restarts;
  request.own_group = own_group != 0;
  return start_task(client, "atl_task_start_detached", std::move(request), command, env, task_out);
}

atl_status* atl_task_wait(atl_client* client, int32_t task, int64_t timeout_ms,
                          int32_t* exit_code_out, int32_t* signal_out) {
  return on_client(client, "atl_task_wait", [&]() -> atl_status* {
    atl::TaskStatus t;
    if (auto* s = wait_for_task(client, "atl_task_wait", task, timeout_ms, t)) return s;
    if (exit_code_out) *exit_code_out = t.exit_code;
    if (signal_out) *signal_out = t.signal;
    if (!t.error.empty())
      return make_status(ATL_FAILED, "task " + std::to_string(task) + ": " + t.error);
    return nullptr;
  });
}

atl_status* atl_task_output(atl_client* client, int32_t task, int64_t offset, char** data_out,
                            int64_t* size_out, int64_t* next_offset_out) {
  return on_client(client, "atl_task_output", [&]() -> atl_status* {
    if (!data_out || !size_out)
      return make_status(ATL_USAGE, "atl_task_output: data_out and size_out are required");
    if (task < 1 || offset < 0)
      return make_status(ATL_USAGE, "atl_task_output: bad task or offset");
    constexpr std::int64_t kMax = 1 << 20;
    auto answer = call_supervisor<atl::LogChunks>(
        client,
        caf::make_message(atl::LogRead{
            atl::LogRead::from, {atl::StreamId::of_task(task)}, {std::int64_t{offset}}, kMax}),
        kRequestTimeout);
    if (!answer) return unreachable(client, "atl_task_output", answer.error());
    // Nothing new: no chunk, and the offset stays.
    const auto& chunks = std::get<0>(*answer);
    const std::string data = chunks.bytes.empty() ? std::string() : chunks.bytes.front();
    const std::int64_t next = chunks.next_offsets.empty() ? offset : chunks.next_offsets.front();
    *data_out = static_cast<char*>(std::malloc(data.size() + 1));
    if (!*data_out) return make_status(ATL_INTERNAL, "atl_task_output: out of memory");
    std::memcpy(*data_out, data.data(), data.size());
    (*data_out)[data.size()] = 0;
    *size_out = static_cast<int64_t>(data.size());
    if (next_offset_out) *next_offset_out = next;
    return nullptr;
  });
}

atl_status* atl_task_result(atl_client* client, int32_t task, int64_t timeout_ms,
                            char** result_out) {
  return on_client(client, "atl_task_result", [&]() -> atl_status* {
    if (!result_out) return make_status(ATL_USAGE, "atl_task_result: result_out is NULL");
    *result_out = nullptr;
    atl::TaskStatus t;
    if (auto* s = wait_for_task(client, "atl_task_result", task, timeout_ms, t)) return s;
    if (!t.result_error.empty())
      return make_status(ATL_FAILED, "task " + std::to_string(task) + ": " + t.result_error);
    if (t.has_result) return text_out("atl_task_result", t.result, result_out);
    return nullptr;
  });
}

void atl_reply_set(atl_reply* reply, const char* data, int64_t size) {
  if (!reply) return;
  try {
    reply->code = 0;
    reply->data.assign(data ? data : "", data && size > 0 ? static_cast<size_t>(size) : 0);
  } catch (...) {
    reply->code = 1;
    reply->data = "the reply could not be stored (out of memory)";
  }
}

void atl_reply_error(atl_reply* reply, const char* message) {
  if (!reply) return;
  try {
    reply->code = 1;
    reply->data = message ? message : "the actor's handler failed";
  } catch (...) {
    reply->code = 1;
  }
}

atl_status* atl_actor_host(atl_client* client, const char* name, atl_actor_fn fn, void* user_data,
                           atl_actor** out) {
  return on_client(client, "atl_actor_host", [&]() -> atl_status* {
    if (!out || !name || !fn)
      return make_status(ATL_USAGE, "atl_actor_host: name, fn and out are required");
    *out = nullptr;
    auto actor = std::make_unique<atl_actor>();
    atl_actor* a = actor.get();
    // The mailbox: a call waits as a promise until the worker's reply comes.
    auto spawned = std::make_shared<std::promise<caf::actor>>();
    auto spawned_future = spawned->get_future();
    on_bridge(client, [a, spawned, sup = client->supervisor](caf::event_based_actor* bridge) {
      spawned->set_value(bridge->spawn([a, sup](caf::event_based_actor* self) -> caf::behavior {
        auto pending = std::make_shared<std::map<std::int64_t, caf::response_promise>>();
        auto next = std::make_shared<std::int64_t>(0);
        return {
            [self, a, pending, next](atl::HostCall& call) {
              auto promise = self->make_response_promise();
              std::int64_t serial = ++*next;
              pending->emplace(serial, promise);
              {
                std::lock_guard<std::mutex> lock(a->mutex);
                a->queue.push_back({serial, std::move(call.bytes)});
              }
              a->wake.notify_one();
              return promise;
            },
            // The supervisor's liveness ping: answered here, whatever the handler does.
            [](const atl::HostPing&) { return true; },
            // Closing: unregistered by the mailbox itself, so the supervisor has every
            // reply it sent before (then pending callers fail).
            [self, sup](atl::ActorClose& close) { return self->delegate(sup, std::move(close)); },
            [pending](atl::call_atom, std::int64_t serial, std::int32_t code, std::string& reply) {
              auto it = pending->find(serial);
              if (it == pending->end()) return;
              it->second.deliver(atl::HostReply{code, std::move(reply)});
              pending->erase(it);
            },
        };
      }));
    });
    caf::actor handle = spawned_future.get();
    a->client = client;
    a->name = name;
    a->handle = handle;
    a->worker = std::thread([a, fn, user_data] {
      while (true) {
        atl_actor::Work work;
        {
          std::unique_lock<std::mutex> lock(a->mutex);
          a->wake.wait(lock, [a] { return a->closing || !a->queue.empty(); });
          if (a->closing) return;
          work = std::move(a->queue.front());
          a->queue.pop_front();
        }
        atl_reply reply;
        fn(user_data, work.request.data(), static_cast<int64_t>(work.request.size()), &reply);
        caf::anon_send(a->handle, atl::call_atom::value, work.serial, reply.code,
                       std::move(reply.data));
      }
    });
    const char* pod = std::getenv("ATL_POD_NAME");
    std::string owner = std::string(pod && *pod ? pod : "outside the job's pods") + " pid " +
                        std::to_string(::getpid());
    if (auto* s =
            ask(client, "atl_actor_host",
                caf::make_message(atl::actor_reg_atom::value, std::string(name), handle, owner),
                std::chrono::milliseconds(0), nullptr)) {
      stop_actor(a);
      return s;
    }
    {
      std::lock_guard<std::mutex> lock(client->hosted_mutex);
      client->hosted.insert(a);
    }
    *out = actor.release();
    return nullptr;
  });
}

void atl_actor_close(atl_actor* actor) {
  if (!actor) return;
  if (!actor->client) {  // stopped by atl_disconnect already: only its memory is left
    delete actor;
    return;
  }
  try {
    {
      std::lock_guard<std::mutex> lock(actor->client->hosted_mutex);
      actor->client->hosted.erase(actor);
    }
    stop_worker(actor);  // the handler's current call (if any) ends first, its reply sent
    // Interrupted meanwhile: the dropped connection unregisters it.
    if (auto pass = actor->client->gate.enter()) {
      if (auto* s =
              ask(actor->client, "atl_actor_close", caf::make_message(atl::ActorClose{actor->name}),
                  std::chrono::milliseconds(0), nullptr, actor->handle))
        atl_status_free(s);  // gone already (the job ended): nothing more to undo there
    }
    caf::anon_send_exit(actor->handle, caf::exit_reason::user_shutdown);
  } catch (...) {
    // Nothing may cross into C.
  }
  delete actor;
}

atl_status* atl_actor_call(atl_client* client, const char* name, const char* request, int64_t size,
                           int64_t timeout_ms, char** reply_out, int64_t* reply_size) {
  return on_client(client, "atl_actor_call", [&]() -> atl_status* {
    if (!name || (!request && size > 0) || size < 0 || !reply_out || !reply_size)
      return make_status(ATL_USAGE, "atl_actor_call: name, reply_out and reply_size are required");
    if (timeout_ms <= 0)
      return make_status(ATL_USAGE, "atl_actor_call: timeout_ms must be above 0");
    *reply_out = nullptr;
    *reply_size = 0;
    std::string reply;
    if (auto* s = ask(
            client, "atl_actor_call",
            caf::make_message(atl::ActorCall{
                name, std::string(request ? request : "", static_cast<size_t>(size)), timeout_ms}),
            std::chrono::milliseconds(timeout_ms), &reply))
      return s;
    *reply_out = static_cast<char*>(std::malloc(reply.size() + 1));
    if (!*reply_out) return make_status(ATL_INTERNAL, "atl_actor_call: out of memory");
    std::memcpy(*reply_out, reply.data(), reply.size());
    (*reply_out)[reply.size()] = 0;
    *reply_size = static_cast<int64_t>(reply.size());
    return nullptr;
  });
}

atl_status* atl_actor_list(atl_client* client, char** json_out) {
  return on_client(client, "atl_actor_list", [&]() -> atl_status* {
    std::string text;
    if (auto* s = ask_text(client, "atl_actor_list", caf::make_message(atl::actor_list_atom::value),
                           &text))
      return s;
    return text_out("atl_actor_list", text, json_out);
  });
}

atl_status* atl_task_kill(atl_client* client, int32_t task) {
  return on_client(client, "atl_task_kill", [&]() -> atl_status* {
    return ask(client, "atl_task_kill", caf::make_message(atl::TaskKill{task}),
               std::chrono::milliseconds(0), nullptr);
  });
}

}  // extern "C"
