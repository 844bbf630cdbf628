// The interposition check (interposition.hpp), in a process whose own
// replacements are linked (this test binary exports them, as headnode does):
// each kind of binding it must tell apart, read from real relocations of
// Debian's libcaf_openssl and libcaf_io.
#define CAF_SUITE interposition
#include "atl/actors/interposition.hpp"

#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/test/unit_test.hpp>

#include "atl/actors/actor_system_setup.hpp"

namespace {

// The one line that checking `wanted` gives ("" and a failed check when not one).
std::string only_line(const std::vector<atl::Interposed>& wanted) {
  const auto problems = atl::interposition_problems(wanted);
  CAF_CHECK_EQUAL(problems.size(), 1u);
  return problems.size() == 1 ? problems.front() : std::string();
}

bool says(const std::string& line, const std::string& part) {
  return line.find(part) != std::string::npos;
}

}  // namespace

CAF_TEST(every replacement of this process is the one CAF calls) {
  const auto problems = atl::interposition_problems(atl::caf_interpositions());
  for (const auto& line : problems) CAF_MESSAGE(line);
  CAF_CHECK(problems.empty());
  CAF_CHECK(atl::interposition_report().empty());
}

CAF_TEST(a function atl does not define is found bound elsewhere) {
  // libcaf_openssl calls SSL_get_error; atl has no SSL_get_error.
  const auto line = only_line({{"SSL_get_error", "libcaf_openssl.so", "nothing"}});
  CAF_CHECK(says(line, "atl's SSL_get_error not in use: libcaf_openssl.so"));
  CAF_CHECK(says(line, "calls go to libssl.so"));
}

CAF_TEST(a caller without a relocation for it binds its own) {
  // As a CAF built -Bsymbolic-functions would: no slot to go through.
  const auto line = only_line({{"SSL_peek", "libcaf_openssl.so", "the peeking fix"}});
  CAF_CHECK(says(line, "binds its own (no relocation"));
  CAF_CHECK(says(line, "; off in this process: the peeking fix"));
}

CAF_TEST(a caller bound to its own definition says atl does not export it) {
  // A function of libcaf_io that atl does not replace, which libcaf_io
  // reaches through a relocation of its own (a vtable's word).
  const auto line =
      only_line({{"_ZN3caf2io11basp_broker25learned_new_node_directlyERKNS_7node_idEb",
                  "libcaf_io.so", "x"}});
  CAF_CHECK(says(line, "learned_new_node_directly"));
  CAF_CHECK(says(line, "calls its own definition (atl's object does not export it)"));
}

CAF_TEST(a caller that is not loaded is no problem) {
  CAF_CHECK(atl::interposition_problems({{"SSL_read", "libnot_here.so", "x"}}).empty());
}

CAF_TEST(problems of one caller and target are one line) {
  const auto line = only_line(
      {{"SSL_get_error", "libcaf_openssl.so", "a"}, {"SSL_pending", "libcaf_openssl.so", "b"}});
  CAF_CHECK(says(line, "SSL_get_error, SSL_pending"));
  CAF_CHECK(says(line, "a; b"));
}

// The handshake gate (openssl_interpose.cpp) is CAF's: a server handshake
// over a context that loaded no CA (the dashboard's) waits outside it.
namespace {

// A server session over one end of a socket pair whose other end never
// speaks: its SSL_accept wants to read.
int waiting_handshake(SSL_CTX* ctx, int fds[2]) {
  CAF_REQUIRE_EQUAL(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fds[0]);
  const int ret = SSL_accept(ssl);
  const int error = SSL_get_error(ssl, ret);
  SSL_free(ssl);
  ::close(fds[0]);
  ::close(fds[1]);
  return error;
}

}  // namespace

CAF_TEST(only CAFs handshakes pass the gate) {
  const std::size_t before = atl::tls_handshakes_waiting();
  SSL_CTX* other = SSL_CTX_new(TLS_server_method());
  int fds[2];
  CAF_CHECK_EQUAL(waiting_handshake(other, fds), SSL_ERROR_WANT_READ);
  SSL_CTX_free(other);
  CAF_CHECK_EQUAL(atl::tls_handshakes_waiting(), before);  // freed: nothing left either way
  // Seen while it waits: a context that loaded a CA (CAF's) is counted.
  SSL_CTX* cafs = SSL_CTX_new(TLS_server_method());
  SSL_CTX_load_verify_locations(cafs, "/nonexistent-ca.pem", nullptr);
  SSL_CTX* plain = SSL_CTX_new(TLS_server_method());
  for (auto [ctx, counted] : {std::pair{cafs, true}, std::pair{plain, false}}) {
    CAF_REQUIRE_EQUAL(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fds[0]);
    CAF_CHECK_EQUAL(SSL_get_error(ssl, SSL_accept(ssl)), SSL_ERROR_WANT_READ);
    CAF_CHECK_EQUAL(atl::tls_handshakes_waiting(), before + (counted ? 1 : 0));
    SSL_free(ssl);
    CAF_CHECK_EQUAL(atl::tls_handshakes_waiting(), before);
    ::close(fds[0]);
    ::close(fds[1]);
  }
  SSL_CTX_free(cafs);
  SSL_CTX_free(plain);
}
