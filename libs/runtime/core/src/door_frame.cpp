#include "atl/core/door_frame.hpp"

#include <algorithm>

namespace atl {

namespace {

void put_be(std::string& out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

std::uint64_t get_be(std::string_view in, int bytes) {
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

}  // namespace

std::string encode_door_frame(std::string_view payload) {
  std::string out;
  out.reserve(4 + payload.size());
  put_be(out, payload.size(), 4);
  out.append(payload);
  return out;
}

Status DoorFrameReader::feed(std::string_view bytes) {
  if (broken_) return make_error("the door's stream is broken");
  buffer_.append(bytes);
  if (buffer_.size() >= 4) {
    auto length = get_be(buffer_, 4);
    if (length > kMaxDoorFrame) {
      broken_ = true;
      buffer_.clear();
      return make_error("a door frame of " + std::to_string(length) + " bytes (at most " +
                        std::to_string(kMaxDoorFrame) + ")");
    }
  }
  return Ok{};
}

std::optional<std::string> DoorFrameReader::next() {
  if (broken_ || buffer_.size() < 4) return std::nullopt;
  auto length = get_be(buffer_, 4);
  if (buffer_.size() < 4 + length) return std::nullopt;
  std::string payload = buffer_.substr(4, length);
  buffer_.erase(0, 4 + length);
  // The next frame's length may be known now: check it as feed() would.
  if (buffer_.size() >= 4 && get_be(buffer_, 4) > kMaxDoorFrame) {
    broken_ = true;
    buffer_.clear();
  }
  return payload;
}

std::string encode_door_request(const DoorRequest& request) {
  std::string out;
  put_be(out, static_cast<std::uint64_t>(std::max<std::int64_t>(0, request.timeout.count())), 8);
  out.append(request.body);
  return out;
}

Expected<DoorRequest> decode_door_request(std::string_view payload) {
  if (payload.size() < 8) return make_error("a door request without its timeout");
  auto ms = get_be(payload, 8);
  // The longest wait anyone asks for is minutes; a day is already a bad value.
  if (ms == 0 || ms > 24ull * 3600 * 1000)
    return make_error("a door request's timeout of " + std::to_string(ms) + " ms");
  return DoorRequest{std::chrono::milliseconds(ms), std::string(payload.substr(8))};
}

std::string encode_door_answer(const DoorAnswer& answer) {
  std::string out(1, answer.ok ? '\0' : '\1');
  out.append(answer.body);
  return out;
}

Expected<DoorAnswer> decode_door_answer(std::string_view payload) {
  if (payload.empty()) return make_error("an empty door answer");
  if (payload[0] != '\0' && payload[0] != '\1')
    return make_error("a door answer of kind " +
                      std::to_string(static_cast<unsigned char>(payload[0])));
  return DoorAnswer{payload[0] == '\0', std::string(payload.substr(1))};
}

}  // namespace atl
