#include "atl/os/tls_credentials.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <system_error>
#include <vector>

#include "atl/core/async_or_now.hpp"
#include "atl/os/tls_cache.hpp"

namespace atl::os {

namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
template <class T>
using Owned = std::unique_ptr<T, Free>;

constexpr long kValiditySeconds = 10L * 366 * 24 * 3600;  // a job's lifetime, generously
constexpr long kClockSkewSeconds = 3600;                  // pods' clocks may differ

// OpenSSL's queued errors as one line (it queues several per failure).
std::string ssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Owned<EVP_PKEY> make_key() {
  return Owned<EVP_PKEY>(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
}

bool add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Owned<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

// A certificate for `key`, named CN=`name`, signed by `issuer_key` (itself when
// `issuer` is null: the CA).
Owned<X509> make_certificate(EVP_PKEY* key, const std::string& name, X509* issuer,
                             EVP_PKEY* issuer_key, const std::string& alt_names = "") {
  Owned<X509> cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1) return nullptr;
  Owned<BIGNUM> serial(BN_new());
  if (!serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())))
    return nullptr;
  if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kClockSkewSeconds) ||
      !X509_gmtime_adj(X509_getm_notAfter(cert.get()), kValiditySeconds))
    return nullptr;
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>("atl"), -1, -1, 0) != 1 ||
      X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1,
                                 0) != 1)
    return nullptr;
  X509* signer = issuer ? issuer : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1)
    return nullptr;
  bool is_ca = issuer == nullptr;
  bool ok = add_extension(cert.get(), signer, NID_basic_constraints,
                          is_ca ? "critical,CA:TRUE,pathlen:0" : "critical,CA:FALSE") &&
            add_extension(cert.get(), signer, NID_key_usage,
                          is_ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature") &&
            add_extension(cert.get(), signer, NID_subject_key_identifier, "hash") &&
            (is_ca ||
             (add_extension(cert.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth") &&
              add_extension(cert.get(), signer, NID_authority_key_identifier, "keyid:always"))) &&
            (alt_names.empty() ||
             add_extension(cert.get(), signer, NID_subject_alt_name, alt_names.c_str()));
  if (!ok || X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return nullptr;
  return cert;
}

// Opens `path` for writing as a new file only this user can read.
Expected<FILE*> create_private_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return make_error("cannot create " + path + ": " + std::strerror(errno));
  FILE* f = ::fdopen(fd, "w");
  if (!f) {
    ::close(fd);
    return make_error("cannot write " + path + ": " + std::strerror(errno));
  }
  return f;
}

template <class Write>
Status write_pem(const std::string& path, Write write) {
  auto f = create_private_file(path);
  if (!f) return make_error(f.error());
  bool ok = write(*f) == 1;
  bool closed = std::fclose(*f) == 0;
  if (!ok || !closed) {
    ::unlink(path.c_str());
    return make_error("cannot write " + path +
                      (ok ? ": " + std::string(std::strerror(errno)) : ": " + ssl_errors()));
  }
  return Ok{};
}

int no_passphrase(char*, int, int, void*) { return 0; }

// OpenSSL 3 frees its providers, method stores and error tables in an atexit
// handler (~0.6 ms a process, paid at every job's end by every process, and
// racing threads that still run); the kernel frees them anyway. Decided by
// OpenSSL's first initialisation, so it runs before any other OpenSSL call
// of atl (cheap: OpenSSL's base initialisation, no configuration read).
void skip_openssl_cleanup_at_exit() { OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr); }

// What starts a credentials thread: the decision above made on the caller's
// thread first (CAF's OpenSSL start-up may run meanwhile), and the thread's
// first OpenSSL calls, which read the environment, after the caller's setenv.
// Where no thread can be made (a pod at its pid limit), the work is done
// here and now: slower, never a crash.
template <class Work>
std::future<Expected<TlsFiles>> start_tls_thread(const Work& work) {
  skip_openssl_cleanup_at_exit();
  return async_or_now(work);
}

struct TlsCache {
  std::mutex mu;
  std::string cert_path, key_path, ca_path;
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  X509_STORE* store = nullptr;
  // Replaced objects stay alive: a pointer handed out is never freed.
  std::vector<X509*> old_certs;
  std::vector<EVP_PKEY*> old_keys;
  std::vector<X509_STORE*> old_stores;
};

TlsCache& tls_cache() {
  static auto* cache = new TlsCache;  // never destroyed: used up to exit
  return *cache;
}

}  // namespace

void remember_tls(const TlsFiles& files, X509* cert, EVP_PKEY* key, X509_STORE* store) {
  TlsCache& c = tls_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.cert) c.old_certs.push_back(c.cert);
  if (c.key) c.old_keys.push_back(c.key);
  if (c.store) c.old_stores.push_back(c.store);
  c.cert = cert && X509_up_ref(cert) == 1 ? cert : nullptr;
  c.key = key && EVP_PKEY_up_ref(key) == 1 ? key : nullptr;
  c.store = store && X509_STORE_up_ref(store) == 1 ? store : nullptr;
  c.cert_path = files.cert;
  c.key_path = files.key;
  c.ca_path = files.ca;
}

X509* tls_cached_certificate(std::string_view path) {
  TlsCache& c = tls_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return path == c.cert_path ? c.cert : nullptr;
}

EVP_PKEY* tls_cached_key(std::string_view path) {
  TlsCache& c = tls_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return path == c.key_path ? c.key : nullptr;
}

X509_STORE* tls_cached_store(std::string_view path) {
  TlsCache& c = tls_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return path == c.ca_path ? c.store : nullptr;
}

bool tls_loaded_before(const TlsFiles& files) {
  auto same = [](const std::string& a, const std::string& b) {
    char ra[PATH_MAX], rb[PATH_MAX];
    return !a.empty() && !b.empty() && ::realpath(a.c_str(), ra) && ::realpath(b.c_str(), rb) &&
           std::strcmp(ra, rb) == 0;
  };
  TlsCache& c = tls_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.cert && c.key && c.store && same(files.cert, c.cert_path) &&
         same(files.key, c.key_path) && same(files.ca, c.ca_path);
}

TlsFiles tls_files_in(const std::string& dir) {
  return TlsFiles{dir, dir + "/ca.pem", dir + "/cert.pem", dir + "/key.pem"};
}

std::string subject_alt_names(const std::string& job_id, const std::vector<std::string>& hosts) {
  std::vector<std::string> names = {"localhost", "127.0.0.1", "::1", job_id + "-head-0"};
  names.insert(names.end(), hosts.begin(), hosts.end());
  std::vector<std::string> seen;
  std::string out;
  for (const auto& name : names) {
    if (name.empty() || name == "0.0.0.0" || name == "::") continue;  // "any": no name
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    unsigned char buf[sizeof(in6_addr)];
    const bool address = ::inet_pton(AF_INET, name.c_str(), buf) == 1 ||
                         ::inet_pton(AF_INET6, name.c_str(), buf) == 1;
    // A host name of letters, digits, '-', '.' and '_' only: nothing that
    // could end the list early.
    if (!address && name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789-._") != std::string::npos)
      continue;
    seen.push_back(name);
    out += (out.empty() ? "" : ",") + std::string(address ? "IP:" : "DNS:") + name;
  }
  return out;
}

Expected<TlsFiles> generate_tls_credentials(const std::string& dir, const std::string& job_id,
                                            const std::vector<std::string>& hosts) {
  skip_openssl_cleanup_at_exit();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return make_error("cannot create " + dir + ": " + std::strerror(errno));
  TlsFiles files = tls_files_in(dir);
  ERR_clear_error();
  auto ca_key = make_key();
  auto key = make_key();
  if (!ca_key || !key) return make_error("cannot make a key: " + ssl_errors());
  auto ca = make_certificate(ca_key.get(), "atl job " + job_id + " CA", nullptr, ca_key.get());
  if (!ca) return make_error("cannot make the job's CA certificate: " + ssl_errors());
  auto cert = make_certificate(key.get(), "atl job " + job_id, ca.get(), ca_key.get(),
                               subject_alt_names(job_id, hosts));
  if (!cert) return make_error("cannot make the job's certificate: " + ssl_errors());
  // The key first: a folder with a certificate but no key is unusable, not half-trusted.
  auto wrote = write_pem(files.key, [&](FILE* f) {
    return PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  if (!wrote) return make_error(wrote.error());
  for (auto [path, c] : {std::pair{files.cert, cert.get()}, std::pair{files.ca, ca.get()}}) {
    wrote = write_pem(path, [c = c](FILE* f) { return PEM_write_X509(f, c); });
    if (!wrote) return make_error(wrote.error());
  }
  Owned<X509_STORE> store(X509_STORE_new());
  if (store && X509_STORE_add_cert(store.get(), ca.get()) == 1)
    remember_tls(files, cert.get(), key.get(), store.get());
  return files;
}

Expected<TlsFiles> load_tls_credentials(const std::string& dir) {
  skip_openssl_cleanup_at_exit();
  TlsFiles files = tls_files_in(dir);
  ERR_clear_error();
  // Each file is read and parsed once (OpenSSL 3 decodes every public key
  // through its decoder framework: a process's TLS start-up is mostly this),
  // and what is parsed is kept for CAF's contexts (tls_cache.hpp).
  // The trusted CAs: every certificate in ca.pem, as
  // SSL_CTX_load_verify_locations would load them.
  if (::access(files.ca.c_str(), R_OK) != 0)
    return make_error("cannot read " + files.ca + ": " + std::strerror(errno));
  Owned<X509_STORE> trusted(X509_STORE_new());
  if (!trusted || X509_STORE_load_file(trusted.get(), files.ca.c_str()) != 1)
    return make_error(files.ca + ": not a PEM certificate (" + ssl_errors() + ")");
  // This process's certificate; a chain after it (a mounted Secret's
  // intermediates) is left to CAF's own loader, chain and all.
  Owned<BIO> cert_in(BIO_new_file(files.cert.c_str(), "r"));
  if (!cert_in) return make_error("cannot read " + files.cert + ": " + std::strerror(errno));
  Owned<X509> cert(PEM_read_bio_X509(cert_in.get(), nullptr, nullptr, nullptr));
  if (!cert) return make_error(files.cert + ": not a PEM certificate (" + ssl_errors() + ")");
  Owned<X509> next(PEM_read_bio_X509(cert_in.get(), nullptr, nullptr, nullptr));
  const bool single = !next;
  ERR_clear_error();  // a single certificate's second read ends in "no start line"
  Owned<BIO> in(BIO_new_file(files.key.c_str(), "r"));
  if (!in) return make_error("cannot read " + files.key + ": " + std::strerror(errno));
  Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(in.get(), nullptr, no_passphrase, nullptr));
  if (!key)
    return make_error(files.key + ": not an unencrypted PEM private key (" + ssl_errors() + ")");
  if (X509_check_private_key(cert.get(), key.get()) != 1)
    return make_error(files.key + ": does not match the certificate " + files.cert);
  Owned<X509_STORE_CTX> ctx(X509_STORE_CTX_new());
  if (!ctx || X509_STORE_CTX_init(ctx.get(), trusted.get(), cert.get(), nullptr) != 1)
    return make_error("cannot check " + files.cert + ": " + ssl_errors());
  if (X509_verify_cert(ctx.get()) != 1) {
    return make_error(files.cert + ": not valid under " + files.ca + " (" +
                      X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())) + ")");
  }
  remember_tls(files, single ? cert.get() : nullptr, key.get(), trusted.get());
  ERR_clear_error();
  return files;
}

std::future<Expected<TlsFiles>> generate_tls_credentials_async(std::string dir, std::string job_id,
                                                               std::vector<std::string> hosts) {
  return start_tls_thread(
      [dir = std::move(dir), job_id = std::move(job_id), hosts = std::move(hosts)] {
        return generate_tls_credentials(dir, job_id, hosts);
      });
}

std::future<Expected<TlsFiles>> load_tls_credentials_async(std::string dir) {
  return start_tls_thread([dir = std::move(dir)] { return load_tls_credentials(dir); });
}

Expected<std::optional<std::string>> choose_tls_dir(const std::string& dir_flag,
                                                    bool insecure_flag) {
  if (insecure_flag && !dir_flag.empty())
    return make_error("--tls-dir and --insecure exclude each other");
  if (insecure_flag) return std::optional<std::string>{};
  std::string dir = dir_flag;
  if (dir.empty()) {
    if (const char* env = std::getenv("ATL_TLS_DIR")) dir = env;
  }
  if (dir.empty()) {
    const char* insecure_env = std::getenv("ATL_INSECURE");
    if (insecure_env && std::string(insecure_env) == "1") return std::optional<std::string>{};
    return make_error(
        "no TLS credentials: give --tls-dir DIR (the job's ca.pem, cert.pem, key.pem) or set "
        "ATL_TLS_DIR; --insecure turns TLS off");
  }
  return std::optional<std::string>(std::move(dir));
}

Expected<std::optional<TlsFiles>> resolve_tls_credentials(const std::string& dir_flag,
                                                          bool insecure_flag) {
  auto dir = choose_tls_dir(dir_flag, insecure_flag);
  if (!dir) return make_error(dir.error());
  if (!*dir) return std::optional<TlsFiles>{};
  auto files = load_tls_credentials(**dir);
  if (!files) return make_error(files.error());
  return std::optional<TlsFiles>(std::move(files).value());
}

void export_tls_choice(const std::optional<TlsFiles>& tls) {
  if (!tls) {
    ::unsetenv("ATL_TLS_DIR");
    ::setenv("ATL_INSECURE", "1", 1);
    return;
  }
  char resolved[PATH_MAX];
  std::string dir = ::realpath(tls->dir.c_str(), resolved) ? std::string(resolved) : tls->dir;
  ::setenv("ATL_TLS_DIR", dir.c_str(), 1);
  ::unsetenv("ATL_INSECURE");
}

}  // namespace atl::os
