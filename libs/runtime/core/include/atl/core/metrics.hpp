// Prometheus metrics of a job, rendered from the same document `atlctl status
// --json` prints (so the two never disagree) plus the log sink's counters.
// Text exposition format 0.0.4: every family has # HELP and # TYPE, label
// values are escaped, one sample per line.
#pragma once

#include <string>
#include <string_view>

#include "atl/core/expected.hpp"

namespace atl {

// status_json: the supervisor's info (status --json). log_stats_json: the log
// sink's {"<stream>": {"bytes": B, "lines": L}, ...} (streams: ranks 0.., the
// driver -1...). progress_json: the hang watch's {"watching", "suspect",
// "progress_age_ms": [per rank, null if unknown]} ("" when there is none).
// A document that is not what they should be is an error naming what is wrong.
Expected<std::string> prometheus_text(std::string_view status_json, std::string_view log_stats_json,
                                      std::string_view progress_json = "");

// A Prometheus label value: backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);

}  // namespace atl
