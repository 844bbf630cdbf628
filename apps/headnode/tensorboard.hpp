// TensorBoard for the job (headnode --tensorboard-logdir DIR, spec
// `tensorboard`): the image's `tensorboard` (found, never required: a head
// without it says so and serves no /tensorboard/) on the head pod's loopback
// at a free port, its output in <state-dir>/tensorboard.log; the dashboard
// relays it at /tensorboard/ behind its login (TensorBoard's pages use
// relative paths, so it runs at / and the relay strips the prefix). Ended
// with the head.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "atl/core/expected.hpp"

namespace atl::headnode {

class TensorBoard {
 public:
  // Starts `bin` (a name looked up in PATH, or a path) on `logdir`.
  static Expected<std::unique_ptr<TensorBoard>> start(const std::string& bin,
                                                      const std::string& logdir,
                                                      const std::string& log_file);
  ~TensorBoard();  // stops it (SIGTERM, SIGKILL after 5 s) and reaps it
  TensorBoard(const TensorBoard&) = delete;
  TensorBoard& operator=(const TensorBoard&) = delete;

  std::uint16_t port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint16_t port_ = 0;
  TensorBoard() = default;
};

// `bin` as an executable path: itself when it has a '/', else the first
// executable of that name in `path` (a PATH value); nothing when none is.
std::optional<std::string> find_executable(const std::string& bin, const std::string& path);

}  // namespace atl::headnode
