// Where a JSON text a user wrote (a job file, --resources) stops being JSON,
// in the user's words: line and column, what was found, what was expected,
// and for the usual slips (a missing ',', a trailing ',', single quotes or
// bare keys, a text cut short) what to change. No library internals.
#pragma once

#include <string>
#include <string_view>

namespace atl {

// "line 4, column 5: unexpected string; expected '}' (a ',' missing before
// it?)"; "" when the text is valid JSON.
std::string json_syntax_error(std::string_view text);

}  // namespace atl
