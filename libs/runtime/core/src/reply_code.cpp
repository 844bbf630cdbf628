#include "atl/core/reply_code.hpp"

namespace atl {

std::optional<ReplyCode> reply_code_from_wire(std::int32_t value) {
  if (value < wire(ReplyCode::ok) || value > wire(ReplyCode::internal)) return std::nullopt;
  return static_cast<ReplyCode>(value);
}

const char* to_string(ReplyCode code) {
  switch (code) {
    case ReplyCode::ok:
      return "ok";
    case ReplyCode::failed:
      return "failed";
    case ReplyCode::usage:
      return "usage";
    case ReplyCode::refused:
      return "refused";
    case ReplyCode::unreachable:
      return "unreachable";
    case ReplyCode::timeout:
      return "timeout";
    case ReplyCode::internal:
      return "internal";
  }
  return "unknown";
}

}  // namespace atl
