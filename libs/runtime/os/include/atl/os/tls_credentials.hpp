// A job's TLS credentials: its own CA and the one certificate every atl process
// of the job presents. Made by the head, or mounted from a Kubernetes Secret.
#pragma once

#include <future>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::os {

// The three PEM files in a credentials folder. Trust is exactly "signed by
// ca.pem": certificates name no host, so any pod of the job may hold them.
struct TlsFiles {
  std::string dir;
  std::string ca;    // dir/ca.pem   the job's CA certificate (what peers must be signed by)
  std::string cert;  // dir/cert.pem this process's certificate, signed by the CA
  std::string key;   // dir/key.pem  its private key (0600)
};

TlsFiles tls_files_in(const std::string& dir);

// Makes a fresh CA (its key is never written) and a certificate signed by it
// (ECDSA P-256), writing ca.pem, cert.pem and key.pem with mode 0600 into
// `dir` (created 0700). Refuses to overwrite existing files. The
// certificate names (subjectAltName) localhost, 127.0.0.1, ::1, the head
// pod `<job-id>-head-0` and each of `hosts` (names or addresses the head is
// reached at), so that a browser that trusts ca.pem accepts the dashboard.
Expected<TlsFiles> generate_tls_credentials(const std::string& dir, const std::string& job_id,
                                            const std::vector<std::string>& hosts = {});

// The subjectAltName value for those names: "DNS:a,IP:1.2.3.4,..." (each
// once; an address as IP, anything else as DNS; empty ones left out).
std::string subject_alt_names(const std::string& job_id, const std::vector<std::string>& hosts);

// Checks that `dir` holds the three files, that they parse, that the key
// matches the certificate and that the certificate verifies against the CA
// (dates included). The error names the file and what is wrong with it.
Expected<TlsFiles> load_tls_credentials(const std::string& dir);

// The same two, started on a thread of their own: OpenSSL 3's start-up and
// the keys' generation or parsing (2-5 ms a process, the largest part of what
// TLS adds to a job's launch) then overlap the caller's actor-system start.
// The caller takes the result, an error included, before its first
// connection. Start it after export_tls_choice (OpenSSL reads the
// environment) and after blocking signals (the thread inherits the mask).
std::future<Expected<TlsFiles>> generate_tls_credentials_async(std::string dir, std::string job_id,
                                                               std::vector<std::string> hosts = {});
std::future<Expected<TlsFiles>> load_tls_credentials_async(std::string dir);

// Where a node process (workernode, atlctl) takes its credentials from:
// `dir_flag` (--tls-dir), else $ATL_TLS_DIR. `insecure_flag` (--insecure), or
// $ATL_INSECURE=1 set by an insecure job for its ranks, means plain TCP
// (nullopt). Neither is an error naming both ways: TLS is never silently off.
Expected<std::optional<TlsFiles>> resolve_tls_credentials(const std::string& dir_flag,
                                                          bool insecure_flag);

// resolve_tls_credentials's choice without reading the files: the folder (its
// files still to be loaded) or nullopt for plain TCP.
Expected<std::optional<std::string>> choose_tls_dir(const std::string& dir_flag,
                                                    bool insecure_flag);

// Puts the choice into this process's environment (ATL_TLS_DIR, absolute, or
// ATL_INSECURE=1), which every rank, driver and local worker inherits, so that
// `atlctl` in them needs no flags. Call before any thread starts.
void export_tls_choice(const std::optional<TlsFiles>& tls);

}  // namespace atl::os
