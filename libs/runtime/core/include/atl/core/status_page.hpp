// Which ranks and pods a status answer lists: a page of each (a big job has
// tens of thousands of ranks). A negative limit: all of them. The answer's
// counts and totals are always of all of them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace atl {

struct StatusPage {
  std::int32_t rank_offset = 0;
  std::int32_t rank_limit = -1;
  std::int32_t pod_offset = 0;
  std::int32_t pod_limit = -1;
  // Debug runs count from the newest: skip the `run_offset` newest, list the
  // `run_limit` before them (still oldest first in the answer).
  std::int32_t run_offset = 0;
  std::int32_t run_limit = -1;
  // 1: each running rank on the page with its figures over time (the
  // dashboard's sparklines); 0: the figures of the moment only.
  std::int32_t trend = 0;
};

// Whether the i-th item (0-based) of a list of `offset`/`limit` is on the page.
inline bool on_page(std::size_t i, std::int32_t offset, std::int32_t limit) {
  const auto first = static_cast<std::size_t>(offset < 0 ? 0 : offset);
  return i >= first && (limit < 0 || i < first + static_cast<std::size_t>(limit));
}

// Whether the i-th of `total` items (0-based, oldest first) is on a page
// counted from the newest.
inline bool on_newest_page(std::size_t i, std::size_t total, std::int32_t offset,
                           std::int32_t limit) {
  return i < total && on_page(total - 1 - i, offset, limit);
}

}  // namespace atl
