#include "atl/os/output_pump.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <vector>

namespace atl::os {

namespace {
using Clock = std::chrono::steady_clock;
}

ExitStatus pump_output(ChildProcess& child, const ChunkSink& sink, const std::atomic<bool>& cancel,
                       const PumpOptions& options) {
  LineChunker chunker;
  OutputBatching batching(
      {options.chunk_bytes, options.batch_quiet, options.batch_pause, options.batch_hold});
  bool sink_alive = true;
  auto deliver = [&](LineChunk&& chunk) {
    batching.delivered(Clock::now());  // nothing is held past this, even if empty
    if (chunk.data.empty()) return;
    if (sink_alive) sink_alive = sink(std::move(chunk));
  };
  // Reads ask for more than the pipe can hold, so a read returns everything
  // that was waiting and its whole lines go out at once (a read that filled
  // the buffer could leave lines behind until the next byte came).
  const int pipe_bytes = child.output_fd() >= 0 ? ::fcntl(child.output_fd(), F_GETPIPE_SZ) : -1;
  const size_t read_size =
      std::max(options.chunk_bytes, pipe_bytes > 0 ? static_cast<size_t>(pipe_bytes) + 4096 : 0);
  std::optional<Clock::time_point> exited_at;
  Clock::time_point partial_since{};  // an unfinished line waits from then ({}: none)
  bool group_killed = false;

  while (child.output_fd() >= 0 || !child.reaped()) {
    if (cancel.load()) {
      child.kill_tree();
      child.close_output();
      return child.wait();
    }
    pollfd fds[2];
    int n = 0;
    if (child.output_fd() >= 0) fds[n++] = {child.output_fd(), POLLIN, 0};
    int pid_slot = -1;
    if (!child.reaped() && child.pidfd() >= 0) {
      pid_slot = n;
      fds[n++] = {child.pidfd(), POLLIN, 0};
    }
    // Lines held for more (a fast writer's): the pipe fills meanwhile, then
    // one look; otherwise wait for output or the end.
    const bool held = batching.holding();
    if (held) std::this_thread::sleep_for(batching.pause(Clock::now()));
    int ready = ::poll(fds, n, held ? 0 : 50);
    if (ready < 0 && errno != EINTR) break;
    const bool readable = child.output_fd() >= 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR));

    if (pid_slot >= 0 ? (fds[pid_slot].revents != 0) : !child.reaped()) {
      if (child.try_wait()) exited_at = Clock::now();
    }
    if (readable) {
      ssize_t got = ::read(child.output_fd(), chunker.prepare(read_size), read_size);
      chunker.commit(got > 0 ? static_cast<size_t>(got) : 0);
      if (got > 0) {
        // Chunks of at most chunk_bytes; what is whole now goes now unless
        // output is coming fast (then it waits a moment for more).
        while (chunker.complete_bytes() >= options.chunk_bytes)
          deliver(chunker.take(options.chunk_bytes));
        if (chunker.complete_bytes() > 0 && !batching.hold(Clock::now(), chunker.complete_bytes()))
          deliver(chunker.take(options.chunk_bytes));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        deliver(chunker.take_rest());
        child.close_output();
      }
    } else if (held) {
      deliver(chunker.take(options.chunk_bytes));  // nothing more came: they go
    }
    if (chunker.buffered_bytes() > chunker.complete_bytes()) {
      if (partial_since == Clock::time_point{}) {
        partial_since = Clock::now();
      } else if (Clock::now() - partial_since >= options.partial_flush) {
        deliver(chunker.take_partial());
        partial_since = Clock::time_point{};
      }
    } else {
      partial_since = Clock::time_point{};
    }
    if (exited_at && child.output_fd() >= 0) {
      // The main process is gone but someone still holds the pipe open.
      auto waited = Clock::now() - *exited_at;
      if (!group_killed && waited > options.drain_timeout) {
        child.signal(SIGKILL);
        group_killed = true;
      } else if (waited > 2 * options.drain_timeout) {
        deliver(chunker.take_rest());
        child.close_output();
      }
    }
  }
  deliver(chunker.take_rest());
  if (!exited_at) child.wait();
  // Leftover background members of the group do not outlive the rank.
  child.signal(SIGKILL);
  return *child.status();
}

}  // namespace atl::os
