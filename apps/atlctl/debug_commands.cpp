// atlctl stop, run and recover: the seed's debug workflow. The supervisor
// decides what is allowed; these print the seed's lines and map its answers
// to exit codes.
#include <caf/all.hpp>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "atl/actors/messages.hpp"
#include "atl/core/shell.hpp"
#include "cli.hpp"

namespace atlctl {

namespace {

constexpr auto kQuickAnswer = std::chrono::seconds(15);
constexpr auto kStartAnswer = std::chrono::seconds(60);
constexpr auto kStopAnswer = std::chrono::minutes(10);  // ranks get their grace first
constexpr std::int64_t kRunPollMs = 250;

void no_options(po::options_description&) {}

Answer checked(Answer a) {
  if (a.code != 0) die(a.code, a.text);
  return a;
}

int stop(SupervisorClient& client, const po::variables_map&) {
  checked(client.answer_or_die(caf::make_message(atl::debug_stop_atom::value), kQuickAnswer));
  std::cout << "Stopping task in all workers..." << std::endl;
  checked(client.answer_or_die(caf::make_message(atl::stop_wait_atom::value), kStopAnswer));
  std::cout << "Stop job task success." << std::endl;
  return kExitOk;
}

int recover(SupervisorClient& client, const po::variables_map&) {
  checked(client.answer_or_die(caf::make_message(atl::recover_atom::value), kStartAnswer));
  std::cout << "Task recovering...\nTask recover success." << std::endl;
  return kExitOk;
}

// run's words after the options are the command: "-r 0 ls -la" runs "ls -la".
std::vector<std::string> split_run_words(std::vector<std::string>& args) {
  std::vector<std::string> options;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    // "-r -1" must reach the rank parser (and its error), not look like a flag.
    if ((a == "-r" || a == "--ranks") && i + 1 < args.size()) {
      options.push_back("--ranks=" + args[++i]);
      continue;
    }
    options.push_back(a);
  }
  std::vector<std::string> words(args.begin() + static_cast<long>(i), args.end());
  args = options;
  return words;
}

void run_options(po::options_description& desc) {
  desc.add_options()("ranks,r", po::value<std::string>()->default_value("all"),
                     "ranks: all, 1,2,3, 1-8, 0,2-4,7")(
      "force,f", "run in any state, untracked: stop leaves it running")(
      "detach", "return once the command started; read its output with atlctl logs");
}

int run(SupervisorClient& client, const po::variables_map& vm) {
  if (!vm.count("words")) die(kExitUsage, "run: no command given");
  std::string command = atl::command_from_words(vm["words"].as<std::vector<std::string>>());
  bool forced = vm.count("force") > 0;
  Answer started = checked(client.answer_or_die(
      caf::make_message(atl::debug_run_atom::value, vm["ranks"].as<std::string>(), command, forced),
      kStartAnswer));
  std::cout << "Send command to all workers success." << std::endl;
  if (vm.count("detach")) return kExitOk;

  // Ctrl-C from here on ends only atlctl: the ranks' commands run on.
  auto status = nlohmann::json::parse(started.text);
  const std::int32_t run_id = status["run"];
  std::map<std::int32_t, std::int64_t> offsets;  // stream -> bytes printed
  for (const auto& r : status["ranks"]) offsets[r["stream"].get<std::int32_t>()] = 0;
  auto drain = [&] {
    for (auto& [stream, offset] : offsets) {
      while (auto got = client.bytes(
                 caf::make_message(atl::read_atom::value, stream, offset, std::int64_t{1} << 20))) {
        if (got->data.empty()) break;
        print_prefixed(stream, got->data);
        offset = got->next_offset;
      }
    }
    std::cout.flush();
  };
  while (true) {
    Answer a = checked(client.answer_or_die(
        caf::make_message(atl::run_wait_atom::value, run_id, kRunPollMs), kQuickAnswer));
    status = nlohmann::json::parse(a.text);
    drain();  // a finished rank's output is complete before its end is reported
    if (status["done"].get<bool>()) break;
  }
  int failed = 0;
  for (const auto& r : status["ranks"]) {
    int code = r["code"], signal = r["signal"];
    if (code == 0 && signal == 0 && !r.contains("error")) continue;
    ++failed;
    std::string why = r.contains("error") ? "could not run: " + r["error"].get<std::string>()
                      : signal != 0       ? "killed by signal " + std::to_string(signal)
                                          : "exit code " + std::to_string(code);
    std::cout << "rank " << r["rank"].get<int>() << " on " << r["pod"].get<std::string>()
              << " failed: " << why << "\n";
  }
  std::cout.flush();
  return failed == 0 ? kExitOk : kExitFailed;
}

}  // namespace

const Command kStopCommand{
    "Usage: atlctl stop\n\n"
    "In state command: stops user code on all workers (SIGTERM, SIGKILL after the\n"
    "grace) and parks the job in debugStop. In debugCommand: stops the debug\n"
    "command (processes of run -f are not tracked and keep running). Prints\n"
    "'Stopping task in all workers...' then 'Stop job task success.' Never uses\n"
    "the restart budget.",
    no_options, stop};

const Command kRunCommand{
    "Usage: atlctl run [-r RANKS] [-f] [--detach] CMD...\n\n"
    "Runs CMD on the chosen ranks with each rank's full environment. Needs\n"
    "debugStop (unless -f) and leaves the job in debugCommand: end it with\n"
    "atlctl stop before the next run/check/burn. One word is a shell line\n"
    "(\"ps -ef | grep python\"); several words are an argv. Prints 'Send command to\n"
    "all workers success.', then each rank's output as '[rank N] line', then a\n"
    "line per failed rank. Exit 0 only if every rank exited 0. Ctrl-C detaches.",
    run_options, run, split_run_words};

const Command kRecoverCommand{
    "Usage: atlctl recover\n\n"
    "Only from debugStop: restarts user code from scratch on every rank (same\n"
    "ranks, same environment); the job is in command again. Prints 'Task\n"
    "recovering...' then 'Task recover success.' Never uses the restart budget.",
    no_options, recover};

}  // namespace atlctl
