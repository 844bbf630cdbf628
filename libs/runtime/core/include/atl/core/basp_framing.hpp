// BASP's framing, read along as bytes arrive on a connection, so that what
// is not BASP never reaches CAF 0.17's parser: it trusted every header (80
// bytes from a holder of the job's credentials SIGSEGVed the head; a payload
// length of 0xffffffff made it allocate 4 GiB and stall until its pods were
// declared lost). Plain C++: openssl_interpose.cpp feeds it what SSL_read
// returned and closes the connection at the first refusal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace atl {

class BaspFraming {
 public:
  // A header's size on the wire (caf::io::basp::header_size), and the most
  // payload atl's own messages need (the largest, a log read, is a few MB).
  static constexpr std::size_t kHeaderSize = 32;
  static constexpr std::uint32_t kMaxPayload = 256u << 20;

  // `accepted`: this end accepted the connection (it greets first, so the
  // peer's first message is a client handshake); else it connected (the
  // first message it reads is the server's handshake).
  explicit BaspFraming(bool accepted) : accepted_(accepted) {}

  // The next `n` bytes read. Nothing when they are BASP so far; else why
  // not, in words (and every later call says it again).
  std::optional<std::string> take(const unsigned char* data, std::size_t n);

 private:
  std::optional<std::string> check_header();

  bool accepted_;
  unsigned char header_[kHeaderSize] = {};
  std::size_t have_ = 0;            // bytes of the current header
  std::uint64_t payload_left_ = 0;  // bytes of the current payload still to come
  std::uint64_t headers_ = 0;       // complete headers so far
  std::optional<std::string> refused_;
};

}  // namespace atl
