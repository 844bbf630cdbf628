// LineChunker: turns a byte stream into chunks of whole lines, so log lines are
// never split across messages. Pure; the output pump feeds it pipe reads.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace atl::os {

struct LineChunk {
  std::string data;  // whole lines, each ending in '\n' (take_partial: the tail may not)
  int lines = 0;     // complete lines in data
};

class LineChunker {
 public:
  // Lines longer than max_line are cut into pieces of max_line bytes.
  explicit LineChunker(std::size_t max_line = 1 << 20) : max_line_(max_line) {}

  void feed(std::string_view bytes);
  // Reading into the chunker: room for `n` bytes, then commit what was
  // actually read. The room is a buffer of its own, kept between reads and
  // never cleared: a read of a few KB into a 256 KB room costs those KB
  // (a std::string resized to the room zeroed all of it, every read).
  char* prepare(std::size_t n);
  void commit(std::size_t n);
  std::size_t complete_bytes() const { return complete_end_; }
  std::size_t buffered_bytes() const { return buffer_.size(); }

  // Takes whole lines up to about max_bytes (at least one line if there is one).
  LineChunk take(std::size_t max_bytes);
  // At end of stream: everything left, a final unterminated line given a '\n'.
  LineChunk take_rest();
  // Everything buffered as it is, an unfinished line included (no '\n' added):
  // progress bars that redraw with '\r' must show up without waiting for one.
  LineChunk take_partial();

 private:
  void scan();

  std::string buffer_;
  std::unique_ptr<char[]> room_;  // prepare()'s, uninitialized
  std::size_t room_size_ = 0;
  std::size_t complete_end_ = 0;  // buffer_[0, complete_end_) is whole lines
  std::size_t complete_lines_ = 0;
  std::size_t scan_from_ = 0;
  std::size_t max_line_;
};

}  // namespace atl::os
