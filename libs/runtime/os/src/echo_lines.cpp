#include "atl/os/echo_lines.hpp"

#include <algorithm>
#include <cstring>

namespace atl::os {

EchoBatches::EchoBatches(std::vector<EchoPiece> pieces, std::size_t max_iov,
                         std::size_t atomic_bytes)
    : pieces_(std::move(pieces)),
      max_iov_(std::max<std::size_t>(max_iov, 2)),
      atomic_bytes_(atomic_bytes) {}

bool EchoBatches::next(std::vector<iovec>& out) {
  out.clear();
  std::size_t bytes = 0;
  while (piece_ < pieces_.size()) {
    const EchoPiece& p = pieces_[piece_];
    if (pos_ >= p.text.size()) {
      ++piece_;
      pos_ = 0;
      continue;
    }
    const char* begin = p.text.data() + pos_;
    const std::size_t left = p.text.size() - pos_;
    const void* nl = std::memchr(begin, '\n', left);
    const std::size_t len =
        nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - begin) + 1 : left;
    const bool prefixed = !p.prefix.empty() && !(pos_ == 0 && p.mid_line);
    const std::size_t line_bytes = len + (prefixed ? p.prefix.size() : 0);
    const std::size_t iovs = prefixed ? 2 : 1;
    if (!out.empty() &&
        (out.size() + iovs > max_iov_ || (atomic_bytes_ > 0 && bytes + line_bytes > atomic_bytes_)))
      return true;  // this line opens the next write
    if (prefixed) out.push_back({const_cast<char*>(p.prefix.data()), p.prefix.size()});
    out.push_back({const_cast<char*>(begin), len});
    bytes += line_bytes;
    pos_ += len;
  }
  return !out.empty();
}

}  // namespace atl::os
