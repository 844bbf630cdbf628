// atlctl's shared pieces: exit codes, the command table entry, and the client
// that asks the supervisor things (every request with a timeout).
#pragma once

#include <atomic>
#include <boost/program_options.hpp>
#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>
#include <caf/scoped_actor.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/door_frame.hpp"
#include "atl/core/host_port.hpp"
#include "atl/core/log_stream.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/core/requests.hpp"
#include "atl/core/run_status.hpp"

namespace atlctl {

namespace po = boost::program_options;

// atlctl's exit status is the supervisor's ReplyCode (the guide's 0/1/2/3).
constexpr int kExitOk = atl::wire(atl::ReplyCode::ok);
constexpr int kExitFailed = atl::wire(atl::ReplyCode::failed);
constexpr int kExitUsage = atl::wire(atl::ReplyCode::usage);
constexpr int kExitRefused = atl::wire(atl::ReplyCode::refused);
constexpr int kExitUnreachable = atl::wire(atl::ReplyCode::unreachable);

[[noreturn]] void die(int code, const std::string& message);

// The guide's long option names (seed 000: --checkType, --workerList, ...)
// beside atlctl's own: each alias is an option of its own in the help, and
// parse_command moves its value to the canonical name (both given: usage).
void guide_aliases(po::options_description& desc,
                   std::initializer_list<std::pair<const char*, const char*>> alias_to_canonical);
void resolve_guide_aliases(po::variables_map& vm, const std::string& command);

struct StreamBytes {
  atl::StreamId stream;
  std::string data;
  std::int64_t next_offset = 0;
};

// A debug command's answer: atlctl's exit code and a text (message or JSON).
struct Answer {
  std::int32_t code = 0;
  std::string text;
};

// atlctl stop's answer: the code, a line when refused, the stop's id.
struct StopAnswer {
  std::int32_t code = 0;
  std::string text;
  std::int32_t op = 0;
};

// A debug run's answer (run, check, burn, run_wait): the code, a line when
// refused or failed, and the run's status as fields.
struct RunAnswer {
  std::int32_t code = 0;
  std::string text;
  atl::RunStatus status;
};

class SupervisorClient {
 public:
  // Exits with kExitUnreachable when the supervisor cannot be reached.
  SupervisorClient(caf::actor_system& sys, const atl::HostPort& address);
  // Through the head's local door, already open and greeted (`door`: its
  // socket, owned from here on).
  SupervisorClient(caf::actor_system& sys, const atl::HostPort& address, int door);
  ~SupervisorClient();
  SupervisorClient(const SupervisorClient&) = delete;
  SupervisorClient& operator=(const SupervisorClient&) = delete;

  // Each returns nothing when no answer came (last_error() says why).
  std::optional<std::string> text(const caf::message& request);
  std::optional<std::vector<StreamBytes>> read_logs(const atl::LogRead& read);
  std::optional<Answer> answer(const caf::message& request, std::chrono::milliseconds timeout);
  std::optional<RunAnswer> run_answer(const caf::message& request,
                                      std::chrono::milliseconds timeout);

  // As above, but exits with kExitUnreachable when no answer came.
  std::string text_or_die(const caf::message& request);
  Answer answer_or_die(const caf::message& request, std::chrono::milliseconds timeout);
  RunAnswer run_answer_or_die(const caf::message& request, std::chrono::milliseconds timeout);
  StopAnswer stop_answer_or_die(const caf::message& request, std::chrono::milliseconds timeout);

  const std::string& last_error() const { return last_error_; }

 private:
  [[noreturn]] void die_unreachable() const;  // kExitUnreachable, naming last_error()
  [[noreturn]] void die_lost() const;         // the connection dropped before an answer

  // The supervisor's reply to `request` handed to `on_reply` (a CAF handler
  // of its shape); last_error_ says why when none came.
  template <class F>
  void ask(const caf::message& request, std::chrono::milliseconds timeout, F on_reply);
  std::optional<caf::message> door_call(const caf::message& request,
                                        std::chrono::milliseconds timeout);

  caf::actor_system& sys_;
  caf::scoped_actor self_;
  atl::HostPort address_;
  caf::actor supervisor_;
  caf::actor watcher_;  // ends atlctl when the connection to the supervisor drops
  std::shared_ptr<std::atomic<bool>> done_ = std::make_shared<std::atomic<bool>>(false);
  std::string last_error_;
  int door_ = -1;
  std::unique_ptr<atl::DoorFrameReader> door_reader_;
};

// The head's local door at `address`, greeted with `ca_pem` (the CA of the
// credentials atlctl would use; empty with --insecure): its socket when the
// door is there and lets this atlctl in, else nothing (go over TCP).
std::optional<int> open_local_door(const atl::HostPort& address, const std::string& ca_pem);

struct Command {
  const char* usage;
  void (*options)(po::options_description&);
  int (*run)(SupervisorClient&, const po::variables_map&);
  // Splits off words that are not options (run's CMD...); null: none allowed.
  std::vector<std::string> (*split_words)(std::vector<std::string>& args) = nullptr;
};

// Writes each line of `data` prefixed as the stream's lines are ("[rank N] ").
void print_prefixed(const atl::StreamId& stream, const std::string& data);
// The stream a status or run entry names ("stream": "rank-3"); dies naming
// what it got when that is no stream's name.
atl::StreamId stream_of(const nlohmann::json& entry);

// Debug commands (debug_commands.cpp).
extern const Command kStopCommand;
extern const Command kRunCommand;
extern const Command kRecoverCommand;
extern const Command kBurnCommand;
extern const Command kCheckCommand;
extern const Command kDebugCommand;
extern const Command kDeleteCommand;

}  // namespace atlctl
