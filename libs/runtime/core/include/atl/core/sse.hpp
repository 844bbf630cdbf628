// Server-Sent Events (the dashboard's log follow): a piece of a log as one
// event whose data lines are the log's lines, and whose id is the offset to
// go on from, so a browser's EventSource that reconnects sends it back as
// Last-Event-ID and misses nothing. No JSON: escaping every byte of a fast
// log was the follower's largest cost.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace atl {

// "id: <next_offset>\n" + "data: <line>\n" per line of `text` + "\n". A log
// line that holds '\r' splits there (SSE ends lines at CR too). When
// `skipped` > 0, an "event: skipped" with the byte count comes first.
std::string sse_log_event(std::string_view text, std::int64_t next_offset, std::int64_t skipped);

// A Last-Event-ID (or offset) header's value: a non-negative decimal of at
// most 18 digits; nothing otherwise.
std::optional<std::int64_t> parse_event_id(std::string_view id);

}  // namespace atl
