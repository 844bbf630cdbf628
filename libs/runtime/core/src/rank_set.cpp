#include "atl/core/rank_set.hpp"

#include <algorithm>
#include <string>

#include "atl/core/split.hpp"
#include "parse_util.hpp"

namespace atl {

namespace {

Expected<int> parse_rank(std::string_view part, std::string_view whole, int world_size) {
  auto v = detail::parse_uint(part);
  if (!v) {
    return make_error("bad rank " + detail::quote(part) + " in " + detail::quote(whole) +
                      ": ranks are non-negative integers");
  }
  if (*v >= world_size) {
    return make_error("rank " + std::string(part) + " in " + detail::quote(whole) +
                      " is out of range: the job has ranks 0-" + std::to_string(world_size - 1));
  }
  return static_cast<int>(*v);
}

}  // namespace

Expected<std::vector<int>> parse_rank_set(std::string_view text, int world_size) {
  std::vector<int> ranks;
  if (text == "all") {
    for (int r = 0; r < world_size; ++r) ranks.push_back(r);
    return ranks;
  }
  if (text.empty()) return make_error("empty rank set (use all, 1,2,3, 1-8 or 0,2-4,7)");
  for (std::string_view part : split_list(text)) {
    if (part.empty()) {
      return make_error("empty element in rank set " + detail::quote(text));
    }
    size_t dash = part.find('-');
    if (dash == std::string_view::npos) {
      auto r = parse_rank(part, text, world_size);
      if (!r) return Error{r.error()};
      ranks.push_back(*r);
    } else {
      auto lo = parse_rank(part.substr(0, dash), text, world_size);
      if (!lo) return Error{lo.error()};
      auto hi = parse_rank(part.substr(dash + 1), text, world_size);
      if (!hi) return Error{hi.error()};
      if (*lo > *hi) {
        return make_error("bad range " + detail::quote(part) + " in " + detail::quote(text) +
                          ": start is after end");
      }
      for (int r = *lo; r <= *hi; ++r) ranks.push_back(r);
    }
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

}  // namespace atl
