// "Did you mean": the one candidate a mistyped word is closest to, within a
// couple of typos (optimal string alignment distance: an insertion, a
// deletion, a change or two letters swapped count one each), so a message
// can name what the user probably meant.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace atl {

// Typos between `a` and `b` (ASCII, case counts).
std::size_t typo_distance(std::string_view a, std::string_view b);

// The candidate `word` is nearest to, when one is nearest and within
// max(1, |word| / 3) typos; nothing otherwise (too far, or a tie).
std::optional<std::string> closest(std::string_view word,
                                   const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" for closest(word, candidates), or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace atl
