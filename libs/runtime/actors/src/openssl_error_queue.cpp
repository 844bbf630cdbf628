// Works around a bug of CAF 0.17's OpenSSL sessions: OpenSSL keeps errors in a
// per-thread queue and SSL_get_error() reports SSL_ERROR_SSL/SYSCALL whenever
// that queue is not empty. CAF drains the queue only inside CAF_LOG_* calls,
// which Debian's build compiles out, so one failed session (an atlctl that
// exits, a stranger failing the handshake) leaves an error behind, and the next
// harmless WANT_READ of *another* session on the multiplexer thread is taken
// for a failure: that connection (a worker's) is dropped. Interposing the four
// I/O calls CAF makes, each now starts with an empty queue, as OpenSSL's docs
// require. The executable's definitions win over libssl's at dynamic link time.
#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>

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
// loop. Giving the core away between tries lets the peer (often a process
// on the same cores) answer sooner; it never blocks.
int handshake_step(int (*real)(SSL*), SSL* ssl) {
  ERR_clear_error();
  int ret = real(ssl);
  if (ret <= 0 && SSL_get_error(ssl, ret) == SSL_ERROR_WANT_READ) sched_yield();
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
  return handshake_step(real, ssl);
}

int SSL_accept(SSL* ssl) {
  static auto real = next_definition<int (*)(SSL*)>("SSL_accept");
  return handshake_step(real, ssl);
}

}  // extern "C"

namespace atl {

// Referenced from actor_system_setup.cpp so that the linker keeps this object
// (nothing else in atl calls these functions; only libcaf_openssl does).
bool openssl_error_queue_fix_linked() { return true; }

}  // namespace atl
