// Who may see the dashboard: whoever holds the job's dashboard token
// (<state-dir>/dashboard-token, or a mounted Secret). A browser trades it once
// for a session (a cookie); scripts and Prometheus send it as a bearer token.
// Pure: the HTTP shell (apps/headnode/dashboard_server.cpp) holds the table
// under a mutex and hands in the clock and the source of random ids.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "atl/core/expected.hpp"

namespace atl {

// Equality of two secrets in a time that depends on their lengths only.
bool same_secret(std::string_view a, std::string_view b);

// What a dashboard token must look like (the file's content, trailing
// newline dropped): 16 to 256 printable ASCII characters, no space.
Status validate_dashboard_token(std::string_view token);

// The link that logs a browser in: URL/login?token=TOKEN (all but
// [A-Za-z0-9._~-] of the token percent-encoded: a mounted token may hold any
// printable character), landing on `next` when given ("/ray/").
std::string login_link(const std::string& url, std::string_view token,
                       const std::string& next = "");

// The value of cookie `name` in a Cookie header ("a=1; atl_session=XYZ");
// nothing when absent or empty.
std::optional<std::string> cookie_value(std::string_view cookie_header, std::string_view name);

// The token of "Authorization: Bearer <token>" (scheme case-insensitive);
// nothing for any other header.
std::optional<std::string> bearer_token(std::string_view authorization_header);

enum class Access {
  granted,
  no_credentials,   // neither a session cookie nor a bearer token
  wrong_token,      // a bearer token (or a login) that is not the job's
  unknown_session,  // a cookie naming no session (never made, logged out, evicted)
  expired_session,  // idle or too old
};
const char* describe(Access a);  // a phrase for the 401's body

// Where the login page sends a browser once it is in (`next`): one of the
// dashboard's own paths ("/ray/", "/#logs/driver"), never another site
// ("//evil", "/\\evil", "https://..."), nothing that would need escaping
// in the page. Empty (the dashboard's front page) when it is not.
std::string login_next(std::string_view next);

struct SessionLimits {
  std::chrono::milliseconds idle = std::chrono::hours(8);
  std::chrono::milliseconds max_age = std::chrono::hours(24);
  std::size_t max_sessions = 1024;  // past it, the least recently used goes
};

class SessionTable {
 public:
  using Clock = std::chrono::steady_clock;
  SessionTable(std::string token, SessionLimits limits, std::function<std::string()> new_id);

  // A new session for whoever presents the job's token.
  Expected<std::string> login(std::string_view presented, Clock::time_point now);
  // A request's credentials: its session cookie (refreshed when valid), else
  // its bearer token.
  Access check(const std::optional<std::string>& session, const std::optional<std::string>& bearer,
               Clock::time_point now);
  void logout(std::string_view session);
  // The session's second secret, for the one request a page makes that acts
  // (the web terminal's handshake): the dashboard's own pages read it from
  // /api/session; another site's page can send the cookie, never read this.
  // Nothing for a session that is not in the table.
  std::optional<std::string> csrf_token(std::string_view session) const;
  std::size_t size() const { return sessions_.size(); }

 private:
  struct Session {
    Clock::time_point created, last_used;
    std::string csrf;
  };
  std::string token_;
  SessionLimits limits_;
  std::function<std::string()> new_id_;
  std::map<std::string, Session, std::less<>> sessions_;
};

}  // namespace atl
