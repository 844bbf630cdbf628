// OpenSSL calls that CAF 0.17's sessions make, interposed by atl's executables
// (and libatl.so): the executable's definitions win over libssl's at dynamic
// link time, and each calls OpenSSL's own through dlsym(RTLD_NEXT).
//
// 1. The error queue. Works around a bug of CAF 0.17's OpenSSL sessions: OpenSSL keeps errors in a
// per-thread queue and SSL_get_error() reports SSL_ERROR_SSL/SYSCALL whenever
// that queue is not empty. CAF drains the queue only inside CAF_LOG_* calls,
// which Debian's build compiles out, so one failed session (an atlctl that
// exits, a stranger failing the handshake) leaves an error behind, and the next
// harmless WANT_READ of *another* session on the multiplexer thread is taken
// for a failure: that connection (a worker's) is dropped. Interposing the four
// I/O calls CAF makes, each now starts with an empty queue, as OpenSSL's docs
// require.
//
// 2. The handshake's busy loop (handshake_step below).
//
// 3. Credentials parsed once, and no session tickets (see below). CAF builds a fresh SSL_CTX per
// connection and loads the certificate, key and CA files into it; the three SSL_CTX_use_*/
// load_verify calls below take the objects atl parsed once for this process
// (os/tls_cache.hpp) when the path is the one atl loaded, and fall back to
// OpenSSL's loaders for anything else.
#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>

#include "atl/os/tls_cache.hpp"

namespace {

template <class F>
F next_definition(const char* name) {
  void* f = ::dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "atl: cannot find OpenSSL's %s: %s\n", name, ::dlerror());
    std::abort();
  }
  return reinterpret_cast<F>(f);
}

// CAF's multiplexer keeps a handshaking socket registered for writing, so
// while a handshake waits for the peer it calls SSL_connect/accept in a busy
// loop. The accepting side (the head, serving many) gives the core away
// between tries and never blocks: a stranger that stalls its handshake
// cannot slow anyone else's. The connecting side (a workernode or atlctl,
// whose multiplexer has nothing else to do until its one connection is up)
// waits up to 20 ms for the peer's bytes instead: sixteen workers spinning
// while the head handshakes one after the other took the head's cores.
int handshake_step(int (*real)(SSL*), SSL* ssl, bool connecting) {
  ERR_clear_error();
  int ret = real(ssl);
  if (ret <= 0 && SSL_get_error(ssl, ret) == SSL_ERROR_WANT_READ) {
    int fd = SSL_get_fd(ssl);
    if (connecting && fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, 20);
    } else {
      sched_yield();
    }
  }
  return ret;
}

}  // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static auto real = next_definition<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static auto real = next_definition<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_connect(SSL* ssl) {
  static auto real = next_definition<int (*)(SSL*)>("SSL_connect");
  return handshake_step(real, ssl, true);
}

int SSL_accept(SSL* ssl) {
  static auto real = next_definition<int (*)(SSL*)>("SSL_accept");
  return handshake_step(real, ssl, false);
}

int SSL_CTX_use_certificate_chain_file(SSL_CTX* ctx, const char* file) {
  static auto real =
      next_definition<int (*)(SSL_CTX*, const char*)>("SSL_CTX_use_certificate_chain_file");
  if (X509* cert = file ? atl::os::tls_cached_certificate(file) : nullptr)
    return SSL_CTX_use_certificate(ctx, cert);  // takes its own reference
  return real(ctx, file);
}

int SSL_CTX_use_PrivateKey_file(SSL_CTX* ctx, const char* file, int type) {
  static auto real =
      next_definition<int (*)(SSL_CTX*, const char*, int)>("SSL_CTX_use_PrivateKey_file");
  if (EVP_PKEY* key = type == SSL_FILETYPE_PEM && file ? atl::os::tls_cached_key(file) : nullptr)
    return SSL_CTX_use_PrivateKey(ctx, key);  // takes its own reference
  return real(ctx, file, type);
}

int SSL_CTX_load_verify_locations(SSL_CTX* ctx, const char* cafile, const char* capath) {
  static auto real =
      next_definition<int (*)(SSL_CTX*, const char*, const char*)>("SSL_CTX_load_verify_locations");
  // Called for each of CAF's per-connection contexts (nothing else in atl's
  // processes checks a peer against a CA file: the dashboard asks browsers for
  // no certificate). CAF never offers a session again, so the two session
  // tickets a TLS 1.3 server sends by default are waste: ~0.45 ms of the
  // head's CPU per connection, on its one I/O thread (bench/results/tls.md).
  SSL_CTX_set_num_tickets(ctx, 0);
  if (X509_STORE* store = cafile && !capath ? atl::os::tls_cached_store(cafile) : nullptr) {
    SSL_CTX_set1_cert_store(ctx, store);  // shared, read-only: peers are checked against it
    return 1;
  }
  return real(ctx, cafile, capath);
}

}  // extern "C"

namespace atl {

// Referenced from actor_system_setup.cpp so that the linker keeps this object
// (nothing else in atl calls these functions; only libcaf_openssl does).
bool openssl_error_queue_fix_linked() { return true; }

}  // namespace atl
