#include "atl/core/basp_framing.hpp"

#include <algorithm>

namespace atl {

namespace {

// caf::io::basp::message_type
constexpr unsigned char kServerHandshake = 0x00;
constexpr unsigned char kClientHandshake = 0x01;
constexpr unsigned char kLastOperation = 0x06;  // heartbeat

std::uint32_t big_endian32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

}  // namespace

std::optional<std::string> BaspFraming::take(const unsigned char* data, std::size_t n) {
  while (n > 0 && !refused_) {
    if (payload_left_ > 0) {
      const std::size_t skip = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, n));
      payload_left_ -= skip;
      data += skip;
      n -= skip;
      continue;
    }
    const std::size_t part = std::min(kHeaderSize - have_, n);
    std::copy(data, data + part, header_ + have_);
    have_ += part;
    data += part;
    n -= part;
    if (have_ == kHeaderSize) {
      refused_ = check_header();
      have_ = 0;
    }
  }
  return refused_;
}

// Layout: operation (1), two padding bytes, flags (1), payload length (4,
// network order), operation data (8), source and destination actor (8 each).
std::optional<std::string> BaspFraming::check_header() {
  const unsigned char op = header_[0];
  const std::uint32_t payload = big_endian32(header_ + 4);
  const bool first = headers_++ == 0;

  if (op > kLastOperation) return "operation " + std::to_string(op) + " is none of BASP's";
  if (payload > kMaxPayload)
    return "a payload of " + std::to_string(payload) + " bytes, over the bound of " +
           std::to_string(kMaxPayload);
  // The acceptor greets with its server handshake and the connector answers
  // with its client handshake (CAF 0.17 sends one more later, to pick the
  // connection): each side's first message is fixed, and the acceptor never
  // reads a server handshake.
  const unsigned char expected = accepted_ ? kClientHandshake : kServerHandshake;
  if (first && op != expected)
    return std::string("the first message is operation ") + std::to_string(op) + ", not the " +
           (accepted_ ? "client" : "server") + " handshake";
  if (accepted_ && op == kServerHandshake) return "a server handshake sent to the acceptor";
  if (op == kServerHandshake && payload == 0) return "a server handshake without its payload";
  payload_left_ = payload;
  return std::nullopt;
}

}  // namespace atl
