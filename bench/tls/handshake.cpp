// What one TLS connection costs atl's processes in CPU, side by side with
// what TLS 1.3 session resumption would cost: the measurement behind issue 8's
// launch target (bench/tls/run.sh writes bench/results/tls.md).
//
// Each connection is made as CAF 0.17 makes one: a fresh SSL_CTX on each side
// (the job's certificate, key and CA store, parsed once as atl's cache keeps
// them), TLS_method, verify peer and fail without a peer certificate, CAF's
// cipher list; then a handshake through an in-memory BIO pair, so that only
// OpenSSL's work is timed (each side's thread CPU time, context included).
//
// Usage: handshake CREDENTIALS_DIR [connections]
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Credentials {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  X509_STORE* store = nullptr;
};

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "handshake: %s\n", what);
  ERR_print_errors_fp(stderr);
  std::exit(1);
}

Credentials load(const std::string& dir) {
  Credentials c;
  FILE* f = std::fopen((dir + "/cert.pem").c_str(), "r");
  if (!f || !(c.cert = PEM_read_X509(f, nullptr, nullptr, nullptr))) die("cannot read cert.pem");
  std::fclose(f);
  f = std::fopen((dir + "/key.pem").c_str(), "r");
  if (!f || !(c.key = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr)))
    die("cannot read key.pem");
  std::fclose(f);
  c.store = X509_STORE_new();
  if (!c.store || X509_STORE_load_file(c.store, (dir + "/ca.pem").c_str()) != 1)
    die("cannot read ca.pem");
  return c;
}

// One ticket key for every server context of the run: what a head would
// keep in memory for resumption to work across CAF's per-connection contexts.
unsigned char g_ticket_name[16], g_ticket_aes[32], g_ticket_hmac[32];

int ticket_key(SSL*, unsigned char name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher,
               EVP_MAC_CTX* mac, int encrypt) {
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string("key", g_ticket_hmac, sizeof g_ticket_hmac),
      OSSL_PARAM_construct_utf8_string("digest", const_cast<char*>("SHA256"), 0),
      OSSL_PARAM_construct_end()};
  if (encrypt) {
    std::memcpy(name, g_ticket_name, 16);
    if (RAND_bytes(iv, EVP_MAX_IV_LENGTH) != 1) return -1;
    if (EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, g_ticket_aes, iv) != 1) return -1;
  } else {
    if (std::memcmp(name, g_ticket_name, 16) != 0) return 0;  // not ours: full handshake
    if (EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, g_ticket_aes, iv) != 1) return -1;
  }
  return EVP_MAC_CTX_set_params(mac, params) == 1 ? 1 : -1;
}

struct Mode {
  const char* name;
  bool tickets;  // the server sends OpenSSL's default two session tickets
  bool resume;   // the client offers a session from an earlier connection
};

SSL_CTX* context(const Credentials& c, bool server, const Mode& mode) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  if (!ctx || SSL_CTX_use_certificate(ctx, c.cert) != 1 || SSL_CTX_use_PrivateKey(ctx, c.key) != 1)
    die("cannot make a context");
  SSL_CTX_set1_cert_store(ctx, c.store);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  if (SSL_CTX_set_cipher_list(ctx, "HIGH:!aNULL:!MD5") != 1) die("cannot set the cipher list");
  if (server) {
    SSL_CTX_set_num_tickets(ctx, mode.tickets ? 2 : 0);
    if (mode.resume) {
      static const unsigned char sid[] = "atl";
      SSL_CTX_set_session_id_context(ctx, sid, 3);
      SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_key);
    }
  }
  return ctx;
}

struct Cost {
  double client = 0, server = 0;
  bool resumed = false;
};

// One connection; `offer` (may be null) is the session the client offers,
// `*kept` receives the client's session (with a ticket) afterwards.
Cost connect_once(const Credentials& c, const Mode& mode, SSL_SESSION* offer, SSL_SESSION** kept) {
  Cost cost;
  double t = cpu_ms();
  SSL_CTX* cctx = context(c, false, mode);
  SSL* cl = SSL_new(cctx);
  cost.client += cpu_ms() - t;
  t = cpu_ms();
  SSL_CTX* sctx = context(c, true, mode);
  SSL* sv = SSL_new(sctx);
  cost.server += cpu_ms() - t;
  BIO *a = nullptr, *b = nullptr;
  if (BIO_new_bio_pair(&a, 0, &b, 0) != 1) die("cannot make a BIO pair");
  SSL_set_bio(cl, a, a);
  SSL_set_bio(sv, b, b);
  SSL_set_connect_state(cl);
  SSL_set_accept_state(sv);
  if (offer) {  // each connection its own copy, as each worker process would load one
    SSL_SESSION* copy = SSL_SESSION_dup(offer);
    SSL_set_session(cl, copy);
    SSL_SESSION_free(copy);
  }
  // One side's next step, timed on its account; true once its handshake is done.
  auto step = [](SSL* ssl, double* spent, const char* failed) {
    double start = cpu_ms();
    int r = SSL_do_handshake(ssl);
    *spent += cpu_ms() - start;
    if (r != 1 && SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ) die(failed);
    return r == 1;
  };
  bool cl_done = false, sv_done = false;
  for (int round = 0; round < 20 && !(cl_done && sv_done); ++round) {
    if (!cl_done) cl_done = step(cl, &cost.client, "the client's handshake failed");
    if (!sv_done) sv_done = step(sv, &cost.server, "the server's handshake failed");
  }
  if (!cl_done || !sv_done) die("the handshake did not end");
  // The client takes in what followed the handshake (TLS 1.3 tickets).
  char byte;
  t = cpu_ms();
  SSL_read(cl, &byte, 1);
  cost.client += cpu_ms() - t;
  ERR_clear_error();
  cost.resumed = SSL_session_reused(cl) == 1;
  // A copy: freeing an SSL that was not shut down marks its own session
  // not resumable (OpenSSL's guard against a session of a broken connection).
  if (kept) *kept = SSL_SESSION_dup(SSL_get0_session(cl));
  t = cpu_ms();
  SSL_free(cl);
  SSL_CTX_free(cctx);
  cost.client += cpu_ms() - t;
  t = cpu_ms();
  SSL_free(sv);
  SSL_CTX_free(sctx);
  cost.server += cpu_ms() - t;
  return cost;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) die("usage: handshake CREDENTIALS_DIR [connections]");
  const int n = argc > 2 ? std::atoi(argv[2]) : 300;
  if (n < 1) die("connections: must be at least 1");
  Credentials c = load(argv[1]);
  RAND_bytes(g_ticket_name, sizeof g_ticket_name);
  RAND_bytes(g_ticket_aes, sizeof g_ticket_aes);
  RAND_bytes(g_ticket_hmac, sizeof g_ticket_hmac);
  const std::vector<Mode> modes = {
      {"full handshake, OpenSSL's default: 2 session tickets sent", true, false},
      {"full handshake, no tickets (what atl does)", false, false},
      {"resumed from an earlier connection's ticket (2 new tickets sent)", true, true},
      {"resumed, no new tickets", false, true}};
  // The tickets offered: one earlier connection's session per resuming mode.
  std::vector<SSL_SESSION*> sessions(modes.size(), nullptr);
  for (size_t m = 0; m < modes.size(); ++m) {
    if (!modes[m].resume) continue;
    Mode issuing = modes[m];
    issuing.tickets = true;  // the session to offer needs a ticket
    connect_once(c, issuing, nullptr, &sessions[m]);
  }
  // Modes interleaved connection by connection: the machine's drift falls on all alike.
  std::vector<std::vector<double>> client(modes.size()), server(modes.size());
  std::vector<int> resumed(modes.size(), 0);
  for (int i = 0; i < n + 20; ++i) {
    for (size_t m = 0; m < modes.size(); ++m) {
      Cost cost = connect_once(c, modes[m], sessions[m], nullptr);
      if (i < 20) continue;  // warm-up
      client[m].push_back(cost.client);
      server[m].push_back(cost.server);
      resumed[m] += cost.resumed ? 1 : 0;
    }
  }
  std::printf(
      "| connection | client CPU (ms, median) | server CPU (ms, median) | both | resumed |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  for (size_t m = 0; m < modes.size(); ++m) {
    std::printf("| %s | %.2f | %.2f | %.2f | %d of %d |\n", modes[m].name, median(client[m]),
                median(server[m]), median(client[m]) + median(server[m]), resumed[m], n);
    SSL_SESSION_free(sessions[m]);
  }
  return 0;
}
