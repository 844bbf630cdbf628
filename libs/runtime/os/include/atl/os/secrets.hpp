// Random secrets (OpenSSL's CSPRNG) and the files of the job's tokens (the
// dashboard's login, Ray's token authentication).
#pragma once

#include <cstddef>
#include <string>

#include "atl/core/expected.hpp"

namespace atl::os {

// `chars` characters of [A-Za-z0-9] (5.95 bits each), from RAND_bytes.
std::string random_token(std::size_t chars);

// The whole of a small file a user names (a job spec, a token): a regular
// file of at most `max_bytes`. A FIFO, a device (/dev/zero) or a directory is
// refused without a read that could block or never end; the error is one
// line naming the file and what is wrong.
Expected<std::string> read_small_file(const std::string& path, std::size_t max_bytes);

// Whether others than its owner may read `path` (mode & 077).
bool readable_by_others(const std::string& path);

// The token in `path` (its first line; at most 4 KiB of file), checked by
// validate_dashboard_token; the error names the file and what is wrong.
Expected<std::string> load_token_file(const std::string& path);

// As load_token_file when `path` exists; otherwise makes it (mode 0600,
// 43 random characters: 256 bits) and returns the new token.
Expected<std::string> load_or_make_token_file(const std::string& path);

}  // namespace atl::os
