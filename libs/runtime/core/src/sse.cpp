#include "atl/core/sse.hpp"

#include "parse_util.hpp"

namespace atl {

std::string sse_log_event(std::string_view text, std::int64_t next_offset, std::int64_t skipped) {
  std::string out;
  out.reserve(text.size() + text.size() / 16 + 64);
  if (skipped > 0) out += "event: skipped\ndata: " + std::to_string(skipped) + "\n\n";
  out += "id: " + std::to_string(next_offset) + "\n";
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  // One pass over the bytes (find_first_of would search its set per byte).
  const char* p = text.data();
  const char* end = p + text.size();
  const char* line = p;
  out += "data: ";
  for (; p != end; ++p) {
    if (*p == '\n' || *p == '\r') {
      out.append(line, static_cast<std::size_t>(p - line));
      out += "\ndata: ";
      line = p + 1;
    }
  }
  out.append(line, static_cast<std::size_t>(end - line));
  out += "\n\n";
  return out;
}

std::optional<std::int64_t> parse_event_id(std::string_view id) { return detail::parse_uint(id); }

}  // namespace atl
