// atlctl: the operator's tool. Reaches the job's supervisor (--address, else
// $ATL_ADDRESS) and asks it things. Exit codes: 0 ok, 1 command failed,
// 2 usage, 3 refused in this state, 4 supervisor unreachable.
#include <boost/program_options.hpp>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/messages.hpp"
#include "atl/core/host_port.hpp"
#include "atl/core/rank_set.hpp"

namespace po = boost::program_options;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 4;
constexpr auto kRequestTimeout = std::chrono::seconds(15);

const char* kTopHelp =
    "Usage: atlctl [--address HOST:PORT] COMMAND [options]\n"
    "\n"
    "Acts on the whole job through its supervisor. The address comes from\n"
    "--address, else from $ATL_ADDRESS (set in every rank and the driver).\n"
    "\n"
    "Commands:\n"
    "  status [--json]              print the job state: 'Job status:  <state>'\n"
    "  logs [-r RANKS] [-f] [--tail N]  print the ranks' output (RANKS: all, 1,2, 0-3, 0,2-4)\n"
    "\n"
    "States: pending, initializing, command, debugStop, debugCommand, restarting,\n"
    "        succeeded, failed.\n"
    "Exit codes: 0 ok, 1 command failed, 2 usage, 3 refused in this state,\n"
    "            4 supervisor unreachable.\n"
    "'atlctl COMMAND --help' shows a command's options.\n";

[[noreturn]] void die(int code, const std::string& message) {
  std::cerr << "atlctl: " << message << "\n";
  std::exit(code);
}

struct LogBytes {
  std::string data;
  std::int64_t next_offset = 0;
};

// One connection to the supervisor; every call is a request with a timeout.
class SupervisorClient {
 public:
  SupervisorClient(caf::actor_system& sys, const atl::HostPort& address)
      : sys_(sys), self_(sys), address_(address) {
    auto found = caf::io::remote_actor(sys, address.host, address.port);
    if (!found) {
      die(kExitUnreachable, "cannot reach the supervisor at " + address.to_string() + ": " +
                                sys.render(found.error()));
    }
    supervisor_ = *found;
  }

  // Each returns nothing when the supervisor did not answer (last_error() says why).
  template <class... Ts>
  std::optional<std::string> ask_text(Ts... xs) {
    std::optional<std::string> out;
    self_->request(supervisor_, kRequestTimeout, xs...)
        .receive([&](const std::string& s) { out = s; },
                 [&](const caf::error& err) { last_error_ = sys_.render(err); });
    return out;
  }

  template <class... Ts>
  std::optional<LogBytes> ask_bytes(Ts... xs) {
    std::optional<LogBytes> out;
    self_->request(supervisor_, kRequestTimeout, xs...)
        .receive(
            [&](const std::string& s, std::int64_t next) {
              out = LogBytes{s, next};
            },
            [&](const caf::error& err) { last_error_ = sys_.render(err); });
    return out;
  }

  template <class... Ts>
  std::string ask_text_or_die(Ts... xs) {
    auto out = ask_text(xs...);
    if (!out) {
      die(kExitUnreachable,
          "the supervisor at " + address_.to_string() + " did not answer: " + last_error_);
    }
    return *out;
  }

 private:
  caf::actor_system& sys_;
  caf::scoped_actor self_;
  atl::HostPort address_;
  caf::actor supervisor_;
  std::string last_error_;
};

struct Command {
  const char* usage;
  void (*options)(po::options_description&);
  int (*run)(SupervisorClient&, const po::variables_map&);
};

// Parses a command's own flags before any connection: --help and usage errors
// never need a supervisor.
po::variables_map parse_command(const std::string& name, const Command& command,
                                const std::vector<std::string>& args) {
  po::options_description desc("Options");
  command.options(desc);
  desc.add_options()("help,h", "show this help");
  const std::string usage = command.usage;
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    die(kExitUsage, name + ": " + e.what());
  }
  if (vm.count("help")) {
    std::cout << usage << "\n\n" << desc << "\n";
    std::exit(kExitOk);
  }
  return vm;
}

const char* kStatusUsage = "Usage: atlctl status [--json]\n\nPrints 'Job status:  <state>'.";

void status_options(po::options_description& desc) {
  desc.add_options()("json", "print the supervisor's full view as JSON");
}

int cmd_status(SupervisorClient& client, const po::variables_map& vm) {
  if (vm.count("json")) {
    std::cout << nlohmann::json::parse(client.ask_text_or_die(atl::info_atom::value)).dump(2)
              << "\n";
  } else {
    std::cout << "Job status:  " << client.ask_text_or_die(atl::status_atom::value) << "\n";
  }
  return kExitOk;
}

const char* kLogsUsage =
    "Usage: atlctl logs [-r RANKS] [-f] [--tail N]\n\n"
    "Prints the ranks' output (the driver's in driver mode), each line\n"
    "prefixed with '[rank N] '.";

void logs_options(po::options_description& desc) {
  desc.add_options()("ranks,r", po::value<std::string>(),
                     "ranks to show: all (default), 1,2,3, 1-8, 0,2-4,7")(
      "follow,f", "keep printing new lines until the job ends")(
      "tail", po::value<long>(), "start with the last N lines of each rank");
}

int cmd_logs(SupervisorClient& client, const po::variables_map& vm) {
  auto info = nlohmann::json::parse(client.ask_text_or_die(atl::info_atom::value));
  std::vector<std::int32_t> streams;
  if (info["mode"] == "driver") {
    if (vm.count("ranks")) die(kExitUsage, "logs: a driver-mode job has no ranks: drop -r");
    streams.push_back(atl::kDriverStream);
  } else {
    int world = info["world_size"].get<int>();
    auto ranks =
        atl::parse_rank_set(vm.count("ranks") ? vm["ranks"].as<std::string>() : "all", world);
    if (!ranks) die(kExitUsage, "logs: -r: " + ranks.error());
    streams.assign(ranks->begin(), ranks->end());
  }
  long tail = vm.count("tail") ? vm["tail"].as<long>() : -1;
  if (vm.count("tail") && tail < 0) die(kExitUsage, "logs: --tail: must not be negative");
  bool follow = vm.count("follow") > 0;

  auto print = [](std::int32_t stream, const std::string& data) {
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
  };
  std::map<std::int32_t, std::int64_t> offsets;
  constexpr std::int64_t kReadMax = 1 << 20;
  // Reads each stream from its offset to the current end; false if the supervisor is gone.
  auto drain = [&]() -> bool {
    for (auto stream : streams) {
      while (true) {
        auto got = client.ask_bytes(atl::read_atom::value, stream, offsets[stream], kReadMax);
        if (!got) return false;
        if (got->data.empty()) break;
        print(stream, got->data);
        offsets[stream] = got->next_offset;
      }
    }
    std::cout.flush();
    return true;
  };
  if (tail >= 0) {
    for (auto stream : streams) {
      auto got = client.ask_bytes(atl::tail_atom::value, stream, static_cast<std::int64_t>(tail));
      if (!got) die(kExitUnreachable, "the supervisor went away while reading logs");
      print(stream, got->data);
      offsets[stream] = got->next_offset;
    }
  }
  if (!drain()) die(kExitUnreachable, "the supervisor went away while reading logs");
  while (follow) {
    auto state = client.ask_text(atl::status_atom::value);
    if (!state || !drain()) {
      std::cerr << "atlctl: the supervisor is gone; stopped following\n";
      break;
    }
    if (*state == "succeeded" || *state == "failed") {
      drain();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string address_text;
  if (const char* env = std::getenv("ATL_ADDRESS")) address_text = env;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::cout << kTopHelp;
      return kExitOk;
    }
    if (a == "--address" || a == "-a") {
      if (i + 1 >= args.size()) die(kExitUsage, "--address needs HOST:PORT");
      address_text = args[++i];
    } else if (a.rfind("--address=", 0) == 0) {
      address_text = a.substr(10);
    } else if (!a.empty() && a[0] == '-') {
      die(kExitUsage, "unknown option '" + a + "' (see atlctl --help)");
    } else {
      break;
    }
  }
  if (i >= args.size()) die(kExitUsage, "no command given (see atlctl --help)");
  std::string command = args[i];
  std::vector<std::string> rest(args.begin() + static_cast<long>(i) + 1, args.end());
  const std::map<std::string, Command> commands = {
      {"status", {kStatusUsage, status_options, cmd_status}},
      {"logs", {kLogsUsage, logs_options, cmd_logs}},
  };
  auto it = commands.find(command);
  if (it == commands.end())
    die(kExitUsage, "unknown command '" + command + "' (see atlctl --help)");
  po::variables_map vm = parse_command(command, it->second, rest);
  if (address_text.empty()) {
    die(kExitUsage, "no supervisor address: pass --address HOST:PORT or set ATL_ADDRESS");
  }
  auto address = atl::parse_host_port(address_text);
  if (!address) die(kExitUsage, "--address: " + address.error());

  atl::AtlSystemConfig cfg;
  caf::actor_system sys{cfg};
  SupervisorClient client(sys, *address);
  return it->second.run(client, vm);
}
