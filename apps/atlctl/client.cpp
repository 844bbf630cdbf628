#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/exit_words.hpp"
#include "atl/actors/local_door.hpp"
#include "atl/actors/messages.hpp"
#include "atl/core/log_stream.hpp"
#include "atl/os/local_door.hpp"
#include "cli.hpp"

namespace atlctl {

namespace {
constexpr auto kRequestTimeout = std::chrono::seconds(15);
}

void die(int code, const std::string& message) {
  std::cout.flush();
  std::cerr << "atlctl: " << message << "\n";
  std::exit(code);
}

atl::StreamId stream_of(const nlohmann::json& entry) {
  const auto name = entry.value("stream", std::string());
  auto id = atl::parse_stream_name(name);
  if (!id) die(kExitFailed, "the supervisor named a stream atlctl cannot read: '" + name + "'");
  return *id;
}

void print_prefixed(const atl::StreamId& stream, const std::string& data) {
  std::string out;
  const std::string prefix = atl::stream_prefix(stream);
  size_t start = 0;
  while (start < data.size()) {
    size_t nl = data.find('\n', start);
    size_t end = nl == std::string::npos ? data.size() : nl + 1;
    out += prefix;
    out.append(data, start, end - start);
    start = end;
  }
  std::cout << out;
}

SupervisorClient::SupervisorClient(caf::actor_system& sys, const atl::HostPort& address)
    : sys_(sys), self_(sys), address_(address) {
  auto found = atl::connect_actor(sys, address.host, address.port);
  if (!found) {
    die(kExitUnreachable,
        "cannot reach the supervisor at " + address.to_string() + ": " +
            atl::describe_connect_error(sys, found.error(), address.host, address.port));
  }
  supervisor_ = *found;
  // A request to a node that went away never fails by itself in CAF 0.17:
  // an atlctl in flight when the head died waited its whole timeout and
  // then blamed the wrong thing. Its connection dropping ends atlctl now.
  auto done = done_;
  watcher_ = sys.spawn<caf::hidden>([supervisor = supervisor_, address = address.to_string(),
                                     done](caf::event_based_actor* self) -> caf::behavior {
    self->monitor(supervisor);
    self->set_down_handler([address, done](caf::down_msg&) {
      if (done->load()) return;
      std::cout.flush();
      std::cerr << "atlctl: lost the supervisor at " << address
                << " before it answered (the head ended, or the connection dropped)\n";
      std::_Exit(kExitUnreachable);
    });
    // It only waits for that down message (or its own exit); a behaviour
    // with no handler would end it at once.
    return {[](caf::exit_msg&) {}};
  });
}

SupervisorClient::SupervisorClient(caf::actor_system& sys, const atl::HostPort& address, int door)
    : sys_(sys),
      self_(sys),
      address_(address),
      door_(door),
      door_reader_(std::make_unique<atl::DoorFrameReader>()) {}

SupervisorClient::~SupervisorClient() {
  if (door_ >= 0) {
    ::close(door_);
    return;
  }
  done_->store(true);
  caf::anon_send_exit(watcher_, caf::exit_reason::user_shutdown);
}

std::optional<int> open_local_door(const atl::HostPort& address, const std::string& ca_pem) {
  auto fd = atl::os::open_door(address.host, address.port);
  if (!fd) return std::nullopt;
  std::string hello = std::string(atl::kDoorHello) + "\n" + ca_pem;
  atl::DoorFrameReader reader;
  std::string payload;
  if (atl::os::write_door(*fd, atl::encode_door_frame(hello)) &&
      atl::os::read_door_frame(*fd, reader, payload,
                               std::chrono::steady_clock::now() + std::chrono::seconds(2)) ==
          atl::os::DoorRead::frame) {
    auto answer = atl::decode_door_answer(payload);
    if (answer && answer->ok) return fd;
  }
  ::close(*fd);
  return std::nullopt;
}

template <class F>
void SupervisorClient::ask(const caf::message& request, std::chrono::milliseconds timeout,
                           F on_reply) {
  if (door_ < 0) {
    self_->request<caf::message_priority::high>(supervisor_, timeout, request)
        .receive(on_reply,
                 [&](const caf::error& err) { last_error_ = atl::error_words(err, sys_); });
    return;
  }
  auto reply = door_call(request, timeout);
  if (!reply) return;
  if (!reply->apply(caf::message_handler{on_reply})) {
    auto shown = caf::to_string(*reply);
    if (shown.size() > 200) shown = shown.substr(0, 200) + "...";
    last_error_ = "the supervisor answered " + shown + " (not what atlctl asked)";
  }
}

std::optional<caf::message> SupervisorClient::door_call(const caf::message& request,
                                                        std::chrono::milliseconds timeout) {
  auto bytes = atl::door_message_bytes(sys_, request);
  if (!bytes) {
    last_error_ = "atlctl could not serialize its request: " + bytes.error();
    return std::nullopt;
  }
  auto frame = atl::encode_door_frame(atl::encode_door_request({timeout, std::move(*bytes)}));
  if (!atl::os::write_door(door_, frame)) die_lost();
  std::string payload;
  std::string why;
  // The head answers a request past its timeout itself (request_timeout);
  // the margin is for a head that no longer answers at all.
  auto deadline = std::chrono::steady_clock::now() + timeout + std::chrono::seconds(5);
  switch (atl::os::read_door_frame(door_, *door_reader_, payload, deadline, &why)) {
    case atl::os::DoorRead::frame:
      break;
    case atl::os::DoorRead::closed:
      die_lost();
    case atl::os::DoorRead::timeout:
      last_error_ = atl::error_words(caf::make_error(caf::sec::request_timeout), sys_);
      return std::nullopt;
    case atl::os::DoorRead::error:
      last_error_ = why;
      return std::nullopt;
  }
  auto answer = atl::decode_door_answer(payload);
  if (!answer) {
    last_error_ = answer.error();
    return std::nullopt;
  }
  if (!answer->ok) {
    last_error_ = answer->body;
    return std::nullopt;
  }
  auto reply = atl::door_message(sys_, answer->body);
  if (!reply) {
    last_error_ = "atlctl could not read the supervisor's answer: " + reply.error();
    return std::nullopt;
  }
  return std::move(*reply);
}

std::optional<std::string> SupervisorClient::text(const caf::message& request) {
  std::optional<std::string> out;
  ask(request, kRequestTimeout, [&](std::string& s) { out = std::move(s); });
  return out;
}

std::optional<std::vector<StreamBytes>> SupervisorClient::read_logs(const atl::LogRead& read) {
  std::optional<std::vector<StreamBytes>> out;
  ask(caf::make_message(read), kRequestTimeout, [&](atl::LogChunks& got) {
    out.emplace();
    for (size_t i = 0;
         i < got.streams.size() && i < got.bytes.size() && i < got.next_offsets.size(); ++i)
      out->push_back({got.streams[i], std::move(got.bytes[i]), got.next_offsets[i]});
  });
  return out;
}

std::optional<Answer> SupervisorClient::answer(const caf::message& request,
                                               std::chrono::milliseconds timeout) {
  std::optional<Answer> out;
  ask(request, timeout, [&](std::int32_t code, std::string& line) {
    out = Answer{code, std::move(line)};
  });
  return out;
}

std::optional<RunAnswer> SupervisorClient::run_answer(const caf::message& request,
                                                      std::chrono::milliseconds timeout) {
  std::optional<RunAnswer> out;
  ask(request, timeout, [&](std::int32_t code, std::string& line, atl::RunStatus& status) {
    out = RunAnswer{code, std::move(line), std::move(status)};
  });
  return out;
}

void SupervisorClient::die_lost() const {
  std::cout.flush();
  std::cerr << "atlctl: lost the supervisor at " << address_.to_string()
            << " before it answered (the head ended, or the connection dropped)\n";
  std::_Exit(kExitUnreachable);
}

void SupervisorClient::die_unreachable() const {
  die(kExitUnreachable,
      "the supervisor at " + address_.to_string() + " did not answer: " + last_error_);
}

std::string SupervisorClient::text_or_die(const caf::message& request) {
  auto out = text(request);
  if (!out) die_unreachable();
  return *out;
}

Answer SupervisorClient::answer_or_die(const caf::message& request,
                                       std::chrono::milliseconds timeout) {
  auto out = answer(request, timeout);
  if (!out) die_unreachable();
  return *out;
}

RunAnswer SupervisorClient::run_answer_or_die(const caf::message& request,
                                              std::chrono::milliseconds timeout) {
  auto out = run_answer(request, timeout);
  if (!out) die_unreachable();
  return *out;
}

StopAnswer SupervisorClient::stop_answer_or_die(const caf::message& request,
                                                std::chrono::milliseconds timeout) {
  std::optional<StopAnswer> out;
  ask(request, timeout, [&](std::int32_t code, std::string& line, std::int32_t op) {
    out = StopAnswer{code, std::move(line), op};
  });
  if (!out) die_unreachable();
  return *out;
}

namespace {
std::vector<std::pair<std::string, std::string>>& guide_alias_table() {
  static std::vector<std::pair<std::string, std::string>> table;
  return table;
}
}  // namespace

void guide_aliases(po::options_description& desc,
                   std::initializer_list<std::pair<const char*, const char*>> alias_to_canonical) {
  for (const auto& [alias, canonical] : alias_to_canonical) {
    desc.add_options()(alias, po::value<std::string>(),
                       (std::string("the guide's name for --") + canonical).c_str());
    guide_alias_table().emplace_back(alias, canonical);
  }
}

void resolve_guide_aliases(po::variables_map& vm, const std::string& command) {
  for (const auto& [alias, canonical] : guide_alias_table()) {
    if (!vm.count(alias)) continue;
    if (vm.count(canonical) && !vm[canonical].defaulted())
      die(kExitUsage, command + ": give --" + canonical + " or --" + alias + ", not both");
    po::variable_value value = vm[alias];
    vm.erase(alias);
    vm.erase(canonical);
    vm.insert({canonical, value});
  }
}

}  // namespace atlctl
