// UnsentOutput: a pod's rank output that the head never acknowledged, kept
// in the workernode process across the pod's loss of the head (a network cut,
// a restarted head) and sent again when the pod rejoins.
//
// Each chunk says where it begins in its process's stream (`offset`: the
// bytes that process wrote before it), so the head can skip what it has
// already (a chunk that arrived but whose acknowledgement was cut). Chunks of
// one stream and attempt that follow each other are merged (up to
// kMaxChunkBytes), so a cut costs the head a few writes, not thousands. The
// store is bounded: past its limit a chunk is dropped and counted, never held.
// Thread-safe: executors' output pumps keep, the node agent takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "atl/core/log_stream.hpp"

namespace atl {

struct UnsentChunk {
  StreamId stream;
  std::int32_t attempt = 0;
  std::int64_t offset = 0;  // where `bytes` begins in its process's output
  std::string bytes;
  std::int32_t lines = 0;
};

class UnsentOutput {
 public:
  static constexpr std::size_t kDefaultLimit = std::size_t{64} << 20;
  static constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 20;

  explicit UnsentOutput(std::size_t limit = kDefaultLimit) : limit_(limit) {}

  // Keeps a chunk, after those kept before it (merged into the last one of
  // its stream and attempt when it follows that one directly and the two fit
  // in kMaxChunkBytes). Past the limit it is dropped: dropped_bytes() says how
  // much. An empty chunk is ignored.
  void keep(UnsentChunk chunk);
  // The oldest chunk, out of the store (nullopt: none). Give it back() if it
  // could not be sent.
  std::optional<UnsentChunk> take();
  // Puts a taken chunk back in front, as it was (the limit is not applied:
  // it was held already).
  void give_back(UnsentChunk chunk);

  bool empty() const;
  std::size_t bytes() const;
  std::size_t chunks() const;
  std::int64_t dropped_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::size_t limit_;
  std::deque<UnsentChunk> chunks_;
  std::size_t bytes_ = 0;
  std::int64_t dropped_ = 0;
};

// How many of a resent chunk's `length` bytes at `offset` its stream's file
// of `have` bytes holds already (the chunk arrived, its acknowledgement did
// not): the head writes only the rest. A chunk past the file's end (bytes in
// between lost for good) is written whole.
std::size_t bytes_already_kept(std::int64_t have, std::int64_t offset, std::size_t length);

// A chunk on its way to the head from pod `pod` (the node agent's
// kept-output message): the head takes it for the log of the attempt that
// wrote it only when well formed (a user code's stream, an attempt, bounds a
// pod's store keeps) and sent from that pod's own node.
struct KeptOutput {
  UnsentChunk chunk;
  std::string pod;
  bool well_formed() const {
    return chunk.stream.is_user_code() && chunk.attempt >= 1 && chunk.offset >= 0 &&
           chunk.lines >= 0 && chunk.bytes.size() <= UnsentOutput::kMaxChunkBytes;
  }
};

}  // namespace atl
