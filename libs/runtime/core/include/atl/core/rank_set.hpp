// Rank selections as atlctl takes them: "all", "1,2,3", "1-8", "0,2-4,7".
// Parsing checks every part against the world size and names the bad one.
#pragma once

#include <string_view>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl {

// Sorted, duplicate-free ranks in [0, world_size).
Expected<std::vector<int>> parse_rank_set(std::string_view text, int world_size);

}  // namespace atl
