// EchoBatches: a stream's lines echoed with its prefix in front of each
// ("[rank 0] "), cut into writev() calls without copying a byte: each write is
// a list of iovecs (prefix, line, prefix, line...) over the chunks as they
// came. Pure; the head's echo thread performs the writes.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <string_view>
#include <vector>

namespace atl::os {

struct EchoPiece {
  std::string_view text;    // lines; the last may be unfinished
  std::string_view prefix;  // before each line that begins in `text` ("": none)
  bool mid_line = false;    // `text` continues a line an earlier piece began
};

class EchoBatches {
 public:
  // At most `max_iov` iovecs per write; with `atomic_bytes` > 0 (stdout is a
  // pipe others may write too), at most that many bytes per write, cut at
  // lines' ends, so that no write is split by the pipe (a line longer than
  // that alone goes in a write of its own).
  EchoBatches(std::vector<EchoPiece> pieces, std::size_t max_iov, std::size_t atomic_bytes);

  // The next write's iovecs (valid until the next call); count 0 when all went.
  struct Write {
    iovec* iov = nullptr;
    int count = 0;
  };
  Write next();

 private:
  std::vector<EchoPiece> pieces_;
  std::vector<iovec> iov_;  // max_iov_ of them, filled by next()
  std::size_t max_iov_;
  std::size_t atomic_bytes_;
  std::size_t piece_ = 0;  // the piece the next line is in
  std::size_t pos_ = 0;    // where in it the next line begins
};

}  // namespace atl::os
