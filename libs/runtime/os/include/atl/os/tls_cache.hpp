// The parsed TLS credentials of this process, kept from the moment they were
// loaded or made. CAF 0.17's OpenSSL sessions build a fresh SSL_CTX for every
// connection and parse the three PEM files into it each time (the key through
// OpenSSL 3's decoder framework: ~1 ms a connection, serial on the head's
// multiplexer while workers join). atl's interposed SSL_CTX_use_* calls
// (actors/src/openssl_interpose.cpp) hand the context these objects instead.
// X509, EVP_PKEY and X509_STORE are reference-counted and read-only once
// made, which is what makes sharing them between contexts and threads safe.
#pragma once

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <string_view>

#include "atl/os/tls_credentials.hpp"

namespace atl::os {

// Keeps (up-refs) the objects for `files`' paths. `cert` null: the
// certificate file holds a chain, which is left to OpenSSL's own loader.
void remember_tls(const TlsFiles& files, X509* cert, EVP_PKEY* key, X509_STORE* store);

// The kept object for exactly this path, or null (borrowed: kept until exit).
X509* tls_cached_certificate(std::string_view path);
EVP_PKEY* tls_cached_key(std::string_view path);
X509_STORE* tls_cached_store(std::string_view path);

// This process made or loaded exactly these files (the same files, however
// their paths are written), certificate, key and CA alike: a local pod its
// head forked after making them has nothing to load.
bool tls_loaded_before(const TlsFiles& files);

}  // namespace atl::os
