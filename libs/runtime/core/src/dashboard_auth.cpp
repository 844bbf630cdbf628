#include "atl/core/dashboard_auth.hpp"

#include <algorithm>
#include <cctype>

namespace atl {

bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  return diff == 0;
}

Status validate_dashboard_token(std::string_view token) {
  if (token.size() < 16)
    return make_error("the dashboard token is too short (" + std::to_string(token.size()) +
                      " characters; at least 16)");
  if (token.size() > 256) return make_error("the dashboard token is longer than 256 characters");
  for (char c : token)
    if (c <= ' ' || c > '~')
      return make_error("the dashboard token has a character that is not printable ASCII");
  return Ok{};
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string login_link(const std::string& url, std::string_view token, const std::string& next) {
  std::string link = url + "/login?token=";
  for (unsigned char c : token) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '~' || c == '-') {
      link += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789ABCDEF";
      link += '%';
      link += hex[c >> 4];
      link += hex[c & 0xf];
    }
  }
  if (!next.empty()) link += "&next=" + next;
  return link;
}

std::optional<std::string> cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    auto semi = header.find(';');
    std::string_view pair = trim(header.substr(0, semi));
    header = semi == std::string_view::npos ? std::string_view{} : header.substr(semi + 1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    if (trim(pair.substr(0, eq)) != name) continue;
    std::string_view value = trim(pair.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    if (value.empty()) return std::nullopt;
    return std::string(value);
  }
  return std::nullopt;
}

std::optional<std::string> bearer_token(std::string_view header) {
  header = trim(header);
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return std::nullopt;
  if (header[kScheme.size()] != ' ') return std::nullopt;
  std::string_view token = trim(header.substr(kScheme.size() + 1));
  if (token.empty() || token.find(' ') != std::string_view::npos) return std::nullopt;
  return std::string(token);
}

const char* describe(Access a) {
  switch (a) {
    case Access::granted:
      return "granted";
    case Access::no_credentials:
      return "log in first: no session (open the URL atlctl dashboard-url prints)";
    case Access::wrong_token:
      return "wrong dashboard token";
    case Access::unknown_session:
      return "no such session (logged out, or the head restarted): log in again";
    case Access::expired_session:
      return "the session expired: log in again";
  }
  return "refused";
}

SessionTable::SessionTable(std::string token, SessionLimits limits,
                           std::function<std::string()> new_id)
    : token_(std::move(token)), limits_(limits), new_id_(std::move(new_id)) {}

Expected<std::string> SessionTable::login(std::string_view presented, Clock::time_point now) {
  if (!same_secret(presented, token_)) return make_error(describe(Access::wrong_token));
  // Expired sessions go first, then the least recently used while full.
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    bool expired =
        now - it->second.last_used >= limits_.idle || now - it->second.created >= limits_.max_age;
    it = expired ? sessions_.erase(it) : std::next(it);
  }
  while (!sessions_.empty() && sessions_.size() >= std::max<std::size_t>(limits_.max_sessions, 1)) {
    auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](auto& a, auto& b) {
      return a.second.last_used < b.second.last_used;
    });
    sessions_.erase(oldest);
  }
  std::string id = new_id_();
  if (id.empty() || sessions_.count(id)) return make_error("could not make a session id");
  std::string csrf = new_id_();
  if (csrf.empty() || csrf == id) return make_error("could not make a session id");
  sessions_.emplace(id, Session{now, now, std::move(csrf)});
  return id;
}

std::optional<std::string> SessionTable::csrf_token(std::string_view session) const {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return std::nullopt;
  return it->second.csrf;
}

Access SessionTable::check(const std::optional<std::string>& session,
                           const std::optional<std::string>& bearer, Clock::time_point now) {
  if (session) {
    auto it = sessions_.find(*session);
    if (it != sessions_.end()) {
      if (now - it->second.last_used >= limits_.idle ||
          now - it->second.created >= limits_.max_age) {
        sessions_.erase(it);
        if (!bearer) return Access::expired_session;
      } else {
        it->second.last_used = now;
        return Access::granted;
      }
    } else if (!bearer) {
      return Access::unknown_session;
    }
  }
  if (bearer) return same_secret(*bearer, token_) ? Access::granted : Access::wrong_token;
  return Access::no_credentials;
}

void SessionTable::logout(std::string_view session) {
  if (auto it = sessions_.find(session); it != sessions_.end()) sessions_.erase(it);
}

std::string login_next(std::string_view next) {
  if (next.size() < 1 || next.size() > 512 || next[0] != '/') return "";
  if (next.size() > 1 && (next[1] == '/' || next[1] == '\\')) return "";
  for (unsigned char c : next)
    if (!(std::isalnum(c) ||
          std::string_view("/-._~?=&%#+").find(static_cast<char>(c)) != std::string_view::npos))
      return "";
  return std::string(next);
}

}  // namespace atl
