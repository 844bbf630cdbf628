// The parsed-once credentials that atl's interposed SSL_CTX_use_* calls hand
// CAF's per-connection contexts (os/tls_cache.hpp): kept for exactly the
// paths loaded, replaced by a later load, and never for a certificate chain
// (OpenSSL's own loader reads chains).
#include "atl/os/tls_cache.hpp"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "atl/os/tls_credentials.hpp"

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/atl-tls-cache-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  std::string path;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(TlsCache, MadeOrLoadedCredentialsAreKeptForTheirPathsOnly) {
  TempDir a;
  auto made = atl::os::generate_tls_credentials(a.path + "/tls", "jo-cache");
  ASSERT_TRUE(made) << made.error();
  X509* cert = atl::os::tls_cached_certificate(made->cert);
  EVP_PKEY* key = atl::os::tls_cached_key(made->key);
  X509_STORE* store = atl::os::tls_cached_store(made->ca);
  ASSERT_NE(cert, nullptr);
  ASSERT_NE(key, nullptr);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(X509_check_private_key(cert, key), 1);  // the pair that was written
  EXPECT_EQ(atl::os::tls_cached_certificate(made->key), nullptr);
  EXPECT_EQ(atl::os::tls_cached_key("/elsewhere/key.pem"), nullptr);
  // A context built from the kept objects verifies like one built from files.
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(SSL_CTX_use_certificate(ctx, cert), 1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx, key), 1);
  EXPECT_EQ(SSL_CTX_check_private_key(ctx), 1);
  SSL_CTX_set1_cert_store(ctx, store);
  SSL_CTX_free(ctx);  // the kept objects outlive the context
  EXPECT_EQ(X509_check_private_key(atl::os::tls_cached_certificate(made->cert), key), 1);

  // Loading another job's folder replaces them; the old pointers stay valid.
  TempDir b;
  auto other = atl::os::generate_tls_credentials(b.path + "/tls", "jo-other");
  ASSERT_TRUE(other);
  auto loaded = atl::os::load_tls_credentials(b.path + "/tls");
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_EQ(atl::os::tls_cached_certificate(made->cert), nullptr);
  EXPECT_NE(atl::os::tls_cached_certificate(loaded->cert), nullptr);
  EXPECT_NE(atl::os::tls_cached_store(loaded->ca), nullptr);
  EXPECT_EQ(X509_check_private_key(cert, key), 1);
}

TEST(TlsCache, ACertificateChainIsLeftToOpenSslsLoader) {
  TempDir a;
  auto made = atl::os::generate_tls_credentials(a.path + "/tls", "jo-chain");
  ASSERT_TRUE(made) << made.error();
  // cert.pem followed by the CA: a chain, as a mounted Secret may hold.
  const std::string chain = slurp(made->cert) + slurp(made->ca);
  std::ofstream(made->cert, std::ios::trunc) << chain;
  auto loaded = atl::os::load_tls_credentials(a.path + "/tls");
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_EQ(atl::os::tls_cached_certificate(loaded->cert), nullptr);
  EXPECT_NE(atl::os::tls_cached_key(loaded->key), nullptr);
  EXPECT_NE(atl::os::tls_cached_store(loaded->ca), nullptr);
}

TEST(TlsCredentials, EachBrokenFileIsNamedWithWhatIsWrong) {
  TempDir a, b;
  auto mine = atl::os::generate_tls_credentials(a.path + "/tls", "jo-mine");
  auto theirs = atl::os::generate_tls_credentials(b.path + "/tls", "jo-theirs");
  ASSERT_TRUE(mine && theirs);
  auto expect_error = [&](const std::string& needle) {
    auto r = atl::os::load_tls_credentials(a.path + "/tls");
    ASSERT_FALSE(r) << needle;
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
  };
  const std::string ca = slurp(mine->ca), cert = slurp(mine->cert), key = slurp(mine->key);
  auto restore = [&] {
    std::ofstream(mine->ca, std::ios::trunc) << ca;
    std::ofstream(mine->cert, std::ios::trunc) << cert;
    std::ofstream(mine->key, std::ios::trunc) << key;
  };
  EXPECT_FALSE(atl::os::load_tls_credentials(a.path + "/nothing-here"));
  std::ofstream(mine->ca, std::ios::trunc) << "not a certificate\n";
  expect_error(mine->ca + ": not a PEM certificate");
  restore();
  std::ofstream(mine->cert, std::ios::trunc) << "";
  expect_error(mine->cert + ": not a PEM certificate");
  restore();
  std::ofstream(mine->key, std::ios::trunc) << "-----BEGIN PRIVATE KEY-----\nAAAA\n";
  expect_error(mine->key + ": not an unencrypted PEM private key");
  restore();
  std::ofstream(mine->key, std::ios::trunc) << slurp(theirs->key);  // another job's key
  expect_error(mine->key + ": does not match the certificate");
  restore();
  std::ofstream(mine->cert, std::ios::trunc) << slurp(theirs->cert);  // signed by another CA
  std::ofstream(mine->key, std::ios::trunc) << slurp(theirs->key);
  expect_error(mine->cert + ": not valid under " + mine->ca);
  restore();
  EXPECT_TRUE(atl::os::load_tls_credentials(a.path + "/tls"));
}

// The async forms (which overlap a process's TLS start-up with its actor
// system's) give what the plain calls give, errors included, and fill the
// cache from their own thread.
TEST(TlsCredentials, TheThreadedFormsGiveWhatThePlainOnesGive) {
  TempDir a;
  auto made = atl::os::generate_tls_credentials_async(a.path + "/tls", "jo-async").get();
  ASSERT_TRUE(made) << made.error();
  EXPECT_NE(atl::os::tls_cached_certificate(made->cert), nullptr);
  auto loaded = atl::os::load_tls_credentials_async(a.path + "/tls").get();
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_EQ(loaded->cert, made->cert);
  EXPECT_NE(atl::os::tls_cached_key(loaded->key), nullptr);
  // Made twice into one folder: refused, as the plain call refuses.
  auto again = atl::os::generate_tls_credentials_async(a.path + "/tls", "jo-async").get();
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().find(made->key), std::string::npos) << again.error();
  auto missing = atl::os::load_tls_credentials_async(a.path + "/nothing-here").get();
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), atl::os::load_tls_credentials(a.path + "/nothing-here").error());
}

// Which credentials a node process takes, before any file is read: the flag,
// then $ATL_TLS_DIR; plain TCP only when asked (--insecure, or
// $ATL_INSECURE=1 from an insecure job); neither is an error naming both.
TEST(TlsCredentials, TheChoiceOfFolderFollowsFlagThenEnvironment) {
  ::unsetenv("ATL_TLS_DIR");
  ::unsetenv("ATL_INSECURE");
  auto neither = atl::os::choose_tls_dir("", false);
  ASSERT_FALSE(neither);
  EXPECT_NE(neither.error().find("--tls-dir"), std::string::npos) << neither.error();
  EXPECT_NE(neither.error().find("--insecure"), std::string::npos) << neither.error();
  auto both = atl::os::choose_tls_dir("/x", true);
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error(), "--tls-dir and --insecure exclude each other");
  auto insecure = atl::os::choose_tls_dir("", true);
  ASSERT_TRUE(insecure);
  EXPECT_FALSE(*insecure);
  ::setenv("ATL_INSECURE", "yes", 1);  // only "1" means plain TCP
  EXPECT_FALSE(atl::os::choose_tls_dir("", false));
  ::setenv("ATL_INSECURE", "1", 1);
  auto inherited = atl::os::choose_tls_dir("", false);
  ASSERT_TRUE(inherited);
  EXPECT_FALSE(*inherited);
  ::setenv("ATL_TLS_DIR", "/from/env", 1);  // credentials win over an inherited ATL_INSECURE
  auto from_env = atl::os::choose_tls_dir("", false);
  ASSERT_TRUE(from_env && *from_env);
  EXPECT_EQ(**from_env, "/from/env");
  auto from_flag = atl::os::choose_tls_dir("/from/flag", false);
  ASSERT_TRUE(from_flag && *from_flag);
  EXPECT_EQ(**from_flag, "/from/flag");
  ::unsetenv("ATL_TLS_DIR");
  ::unsetenv("ATL_INSECURE");
  // resolve_tls_credentials reads the chosen folder: a missing one is named.
  auto resolved = atl::os::resolve_tls_credentials("/no/such/atl-tls", false);
  ASSERT_FALSE(resolved);
  EXPECT_NE(resolved.error().find("/no/such/atl-tls/ca.pem"), std::string::npos)
      << resolved.error();
}

// A browser that trusts ca.pem must accept the dashboard: the certificate
// names the head (it had no subjectAltName at all).
TEST(TlsCredentials, TheCertificateNamesTheHeadForBrowsers) {
  EXPECT_EQ(atl::os::subject_alt_names("jo-x", {"10.0.0.5", "head.example", "0.0.0.0", "",
                                                "bad,name", "localhost", "fe80::1"}),
            "DNS:localhost,IP:127.0.0.1,IP:::1,DNS:jo-x-head-0,IP:10.0.0.5,DNS:head.example,"
            "IP:fe80::1");
  TempDir a;
  auto made = atl::os::generate_tls_credentials(a.path + "/tls", "jo-san", {"10.1.2.3", "head"});
  ASSERT_TRUE(made.ok()) << made.error();
  FILE* f = std::fopen(made->cert.c_str(), "r");
  ASSERT_NE(f, nullptr);
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(X509_check_host(cert, "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert, "head", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert, "jo-san-head-0", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(cert, "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert, "10.1.2.3", 0), 1);
  EXPECT_NE(X509_check_host(cert, "elsewhere", 0, 0, nullptr), 1);
  X509_free(cert);
}

// A local pod forked by its head finds the credentials its head made: the
// same files, however their paths are written; any other files are not.
TEST(TlsCache, LoadedBeforeMeansTheSameFilesWhateverTheirPaths) {
  TempDir dir;
  auto made = atl::os::generate_tls_credentials(dir.path + "/tls", "jo-cache");
  ASSERT_TRUE(made.ok()) << made.error();
  EXPECT_TRUE(atl::os::tls_loaded_before(atl::os::tls_files_in(dir.path + "/tls")));
  EXPECT_TRUE(atl::os::tls_loaded_before(atl::os::tls_files_in(dir.path + "/./tls/")));
  ASSERT_EQ(::symlink((dir.path + "/tls").c_str(), (dir.path + "/link").c_str()), 0);
  EXPECT_TRUE(atl::os::tls_loaded_before(atl::os::tls_files_in(dir.path + "/link")));
  // Other files: a copy elsewhere, a missing folder.
  auto other = atl::os::generate_tls_credentials(dir.path + "/other", "jo-cache");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(atl::os::tls_loaded_before(atl::os::tls_files_in(dir.path + "/tls")));
  EXPECT_TRUE(atl::os::tls_loaded_before(atl::os::tls_files_in(dir.path + "/other")));
  EXPECT_FALSE(atl::os::tls_loaded_before(atl::os::tls_files_in(dir.path + "/missing")));
  // A certificate file holding a chain is not kept: it is loaded again.
  std::ofstream(dir.path + "/other/cert.pem", std::ios::app) << slurp(dir.path + "/other/ca.pem");
  auto chained = atl::os::load_tls_credentials(dir.path + "/other");
  ASSERT_TRUE(chained.ok()) << chained.error();
  EXPECT_FALSE(atl::os::tls_loaded_before(atl::os::tls_files_in(dir.path + "/other")));
}
