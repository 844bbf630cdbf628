#include "tensorboard.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "atl/os/child_process.hpp"
#include "atl/os/reach_probe.hpp"

namespace atl::headnode {

struct TensorBoard::Impl {
  std::optional<os::ChildProcess> process;
};

std::optional<std::string> find_executable(const std::string& bin, const std::string& path) {
  if (bin.empty()) return std::nullopt;
  if (bin.find('/') != std::string::npos)
    return ::access(bin.c_str(), X_OK) == 0 ? std::optional<std::string>(bin) : std::nullopt;
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + bin;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

Expected<std::unique_ptr<TensorBoard>> TensorBoard::start(const std::string& bin,
                                                          const std::string& logdir,
                                                          const std::string& log_file) {
  const char* path = std::getenv("PATH");
  auto exe = find_executable(bin, path ? path : "");
  if (!exe)
    return make_error("'" + bin +
                      "' is not in this pod's PATH (install tensorboard in the image, or give "
                      "--tensorboard-bin)");
  // A free port on the loopback, found now and closed (TensorBoard takes it
  // a moment later; the dashboard's relay answers 502 until it listens).
  std::uint16_t port = 0;
  {
    auto probe = os::ProbeListener::open("127.0.0.1");
    if (!probe) return make_error("no free port on 127.0.0.1: " + probe.error());
    port = probe->port();
  }
  os::SpawnRequest req;
  req.argv = {*exe, "--logdir", logdir, "--host", "127.0.0.1", "--port", std::to_string(port)};
  req.env = os::current_environment();
  req.output = os::OutputMode::file;
  req.output_file = log_file;
  auto child = os::ChildProcess::spawn(req);
  if (!child) return make_error(*exe + ": " + child.error());
  std::unique_ptr<TensorBoard> tb(new TensorBoard());
  tb->impl_ = std::make_unique<Impl>();
  tb->impl_->process.emplace(std::move(child).value());
  tb->port_ = port;
  return tb;
}

TensorBoard::~TensorBoard() {
  if (!impl_ || !impl_->process) return;
  auto& p = *impl_->process;
  p.signal(SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!p.try_wait() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!p.reaped()) {
    p.kill_tree();
    p.wait();
  }
}

}  // namespace atl::headnode
