// ReplyCode: how every request to the supervisor ended, one enum for the
// actors, atlctl's exit status, the C API (atl_code: ATL_* are checked against
// it at compile time) and Python (checked against the library at import). On
// the wire it travels as int32 (`wire`), so old and new peers read the same.
#pragma once

#include <cstdint>
#include <optional>

namespace atl {

enum class ReplyCode : std::int32_t {
  ok = 0,
  failed = 1,       // carried out and failed (a group not placed, a run's rank failed)
  usage = 2,        // bad arguments: nothing changed
  refused = 3,      // not allowed in the job's current state: nothing changed
  unreachable = 4,  // the supervisor could not be reached or did not answer (client side)
  timeout = 5,      // what was waited for did not happen in time
  internal = 6,     // a bug in atl: the text says what
};

inline constexpr std::int32_t wire(ReplyCode code) { return static_cast<std::int32_t>(code); }
// Nothing for a number no ReplyCode has (a newer or a hostile peer).
std::optional<ReplyCode> reply_code_from_wire(std::int32_t value);
const char* to_string(ReplyCode code);  // "ok", "failed", "usage", ...

}  // namespace atl
