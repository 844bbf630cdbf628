// The local door's framing (atlctl <-> the head over a Unix socket): each
// frame is a 4-byte big-endian length and that many bytes. Pure: no sockets.
//
// A request frame: the caller's timeout in milliseconds (8 bytes, big-endian)
// then the request as CAF serialized it. An answer frame: one byte (0: the
// supervisor's reply follows, as CAF serialized it; 1: the request failed,
// its one-line reason follows).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "atl/core/expected.hpp"

namespace atl {

// The largest frame either side accepts: a read_many answer is at most a few
// MiB; 64 MiB is room without letting a bad length allocate the machine.
inline constexpr std::size_t kMaxDoorFrame = std::size_t{64} << 20;

// `payload` with its length in front.
std::string encode_door_frame(std::string_view payload);

// Frames out of a byte stream fed in pieces of any size.
class DoorFrameReader {
 public:
  // Appends bytes read; an error (a length over kMaxDoorFrame) is final.
  Status feed(std::string_view bytes);
  // The next whole frame's payload, if one has arrived.
  std::optional<std::string> next();
  // Bytes held of a frame not yet whole.
  std::size_t pending() const { return buffer_.size(); }

 private:
  std::string buffer_;
  bool broken_ = false;
};

// A connection's first frame: this word, a newline, then the caller's CA
// certificate (PEM; empty without TLS). Answered like a request.
inline constexpr const char* kDoorHello = "atl-door 1";

struct DoorRequest {
  std::chrono::milliseconds timeout{0};
  std::string body;  // the request, serialized
};
std::string encode_door_request(const DoorRequest& request);
Expected<DoorRequest> decode_door_request(std::string_view payload);

struct DoorAnswer {
  bool ok = false;  // body is the reply (serialized); else the failure's line
  std::string body;
};
std::string encode_door_answer(const DoorAnswer& answer);
Expected<DoorAnswer> decode_door_answer(std::string_view payload);

}  // namespace atl
