#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/core/log_stream.hpp"
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

SupervisorClient::~SupervisorClient() {
  done_->store(true);
  caf::anon_send_exit(watcher_, caf::exit_reason::user_shutdown);
}

std::optional<std::string> SupervisorClient::text(const caf::message& request) {
  std::optional<std::string> out;
  self_->request<caf::message_priority::high>(supervisor_, kRequestTimeout, request)
      .receive([&](const std::string& s) { out = s; },
               [&](const caf::error& err) { last_error_ = sys_.render(err); });
  return out;
}

std::optional<LogBytes> SupervisorClient::bytes(const caf::message& request) {
  std::optional<LogBytes> out;
  self_->request<caf::message_priority::high>(supervisor_, kRequestTimeout, request)
      .receive(
          [&](const std::string& s, std::int64_t next) {
            out = LogBytes{s, next};
          },
          [&](const caf::error& err) { last_error_ = sys_.render(err); });
  return out;
}

std::optional<std::vector<std::int64_t>> SupervisorClient::offsets(const caf::message& request) {
  std::optional<std::vector<std::int64_t>> out;
  self_->request<caf::message_priority::high>(supervisor_, kRequestTimeout, request)
      .receive([&](std::vector<std::int64_t>& got) { out = std::move(got); },
               [&](const caf::error& err) { last_error_ = sys_.render(err); });
  return out;
}

std::optional<std::vector<StreamBytes>> SupervisorClient::many_bytes(const caf::message& request) {
  std::optional<std::vector<StreamBytes>> out;
  self_->request<caf::message_priority::high>(supervisor_, kRequestTimeout, request)
      .receive(
          [&](const std::vector<atl::StreamId>& streams, std::vector<std::string>& data,
              const std::vector<std::int64_t>& next) {
            out.emplace();
            for (size_t i = 0; i < streams.size() && i < data.size() && i < next.size(); ++i)
              out->push_back({streams[i], std::move(data[i]), next[i]});
          },
          [&](const caf::error& err) { last_error_ = sys_.render(err); });
  return out;
}

namespace {

// One request answered (code, line, extra...): Out{code, line, extra...};
// nothing when no answer came (`error` says why).
template <class Out, class... Extra>
std::optional<Out> coded_answer(caf::scoped_actor& self, const caf::actor& to,
                                const caf::message& request, std::chrono::milliseconds timeout,
                                caf::actor_system& sys, std::string& error) {
  std::optional<Out> out;
  self->request<caf::message_priority::high>(to, timeout, request)
      .receive(
          [&](std::int32_t code, std::string& line, Extra&... extra) {
            out = Out{code, std::move(line), std::move(extra)...};
          },
          [&](const caf::error& err) { error = sys.render(err); });
  return out;
}

}  // namespace

std::optional<Answer> SupervisorClient::answer(const caf::message& request,
                                               std::chrono::milliseconds timeout) {
  return coded_answer<Answer>(self_, supervisor_, request, timeout, sys_, last_error_);
}

std::optional<RunAnswer> SupervisorClient::run_answer(const caf::message& request,
                                                      std::chrono::milliseconds timeout) {
  return coded_answer<RunAnswer, atl::RunStatus>(self_, supervisor_, request, timeout, sys_,
                                                 last_error_);
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
  auto out = coded_answer<StopAnswer, std::int32_t>(self_, supervisor_, request, timeout, sys_,
                                                    last_error_);
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
