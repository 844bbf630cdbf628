// The dashboard's login rules: token checks, cookie and bearer parsing, and
// the session table's lifetimes and eviction, on a hand-driven clock.
#include "atl/core/dashboard_auth.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

#include "atl/os/secrets.hpp"

using namespace atl;
using namespace std::chrono_literals;
using Clock = SessionTable::Clock;

namespace {

const std::string kToken = "tok-0123456789abcdef";

SessionTable table(SessionLimits limits = {}) {
  auto counter = std::make_shared<int>(0);
  return SessionTable(kToken, limits, [counter] { return "s" + std::to_string(++*counter); });
}

}  // namespace

TEST(DashboardAuth, SameSecretComparesWholeStrings) {
  EXPECT_TRUE(same_secret("abc", "abc"));
  EXPECT_TRUE(same_secret("", ""));
  EXPECT_FALSE(same_secret("abc", "abd"));
  EXPECT_FALSE(same_secret("abc", "ab"));
  EXPECT_FALSE(same_secret("ab", "abc"));
  EXPECT_FALSE(same_secret(std::string("a\0c", 3), "abc"));
}

TEST(DashboardAuth, TokenShape) {
  EXPECT_TRUE(validate_dashboard_token(kToken).ok());
  EXPECT_TRUE(validate_dashboard_token(std::string(256, 'x')).ok());
  auto short_one = validate_dashboard_token("short");
  ASSERT_FALSE(short_one.ok());
  EXPECT_NE(short_one.error().find("too short"), std::string::npos);
  EXPECT_FALSE(validate_dashboard_token("").ok());
  EXPECT_FALSE(validate_dashboard_token(std::string(257, 'x')).ok());
  EXPECT_FALSE(validate_dashboard_token("0123456789abcdef ghi").ok());
  EXPECT_FALSE(validate_dashboard_token("0123456789abcdef\n").ok());
  EXPECT_FALSE(validate_dashboard_token("0123456789abcdef\xc3\xa9").ok());
}

TEST(DashboardAuth, CookieValue) {
  EXPECT_EQ(cookie_value("atl_session=abc", "atl_session"), "abc");
  EXPECT_EQ(cookie_value("a=1; atl_session=abc; b=2", "atl_session"), "abc");
  EXPECT_EQ(cookie_value("a=1;atl_session=\"abc\"", "atl_session"), "abc");
  EXPECT_EQ(cookie_value("  atl_session = abc  ", "atl_session"), "abc");
  EXPECT_EQ(cookie_value("x_atl_session=abc; atl_session=def", "atl_session"), "def");
  EXPECT_EQ(cookie_value("atl_session=a=b", "atl_session"), "a=b");
  // Absent, empty, malformed.
  EXPECT_EQ(cookie_value("", "atl_session"), std::nullopt);
  EXPECT_EQ(cookie_value("other=abc", "atl_session"), std::nullopt);
  EXPECT_EQ(cookie_value("atl_session=", "atl_session"), std::nullopt);
  EXPECT_EQ(cookie_value("atl_session=\"\"", "atl_session"), std::nullopt);
  EXPECT_EQ(cookie_value("atl_session", "atl_session"), std::nullopt);
  EXPECT_EQ(cookie_value(";;;", "atl_session"), std::nullopt);
  EXPECT_EQ(cookie_value("atl_sessionx=abc", "atl_session"), std::nullopt);
}

TEST(DashboardAuth, BearerToken) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("bearer abc"), "abc");
  EXPECT_EQ(bearer_token("BEARER   abc  "), "abc");
  EXPECT_EQ(bearer_token(""), std::nullopt);
  EXPECT_EQ(bearer_token("Bearer"), std::nullopt);
  EXPECT_EQ(bearer_token("Bearer "), std::nullopt);
  EXPECT_EQ(bearer_token("Basic abc"), std::nullopt);
  EXPECT_EQ(bearer_token("Bearerabc"), std::nullopt);
  EXPECT_EQ(bearer_token("Bearer a b"), std::nullopt);
}

TEST(DashboardAuth, LoginNeedsTheToken) {
  auto t = table();
  auto now = Clock::now();
  auto bad = t.login("tok-0123456789abcdeX", now);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), describe(Access::wrong_token));
  EXPECT_FALSE(t.login("", now).ok());
  EXPECT_EQ(t.size(), 0u);  // a refused login leaves nothing behind
  auto good = t.login(kToken, now);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(t.check(*good, std::nullopt, now), Access::granted);
  EXPECT_EQ(t.size(), 1u);
}

TEST(DashboardAuth, CheckNamesWhatIsWrong) {
  auto t = table();
  auto now = Clock::now();
  EXPECT_EQ(t.check(std::nullopt, std::nullopt, now), Access::no_credentials);
  EXPECT_EQ(t.check(std::string("nope"), std::nullopt, now), Access::unknown_session);
  EXPECT_EQ(t.check(std::nullopt, std::string("wrong"), now), Access::wrong_token);
  EXPECT_EQ(t.check(std::nullopt, kToken, now), Access::granted);
  // A stale cookie beside a good bearer token: the token decides.
  EXPECT_EQ(t.check(std::string("nope"), kToken, now), Access::granted);
  EXPECT_EQ(t.check(std::string("nope"), std::string("wrong"), now), Access::wrong_token);
  for (auto a : {Access::no_credentials, Access::wrong_token, Access::unknown_session,
                 Access::expired_session})
    EXPECT_GT(std::string(describe(a)).size(), 10u);
}

TEST(DashboardAuth, IdleSessionsExpireAndUseKeepsThemAlive) {
  auto t = table({std::chrono::minutes(10), std::chrono::hours(24), 16});
  auto t0 = Clock::now();
  auto s = *t.login(kToken, t0);
  EXPECT_EQ(t.check(s, std::nullopt, t0 + 9min), Access::granted);
  EXPECT_EQ(t.check(s, std::nullopt, t0 + 18min), Access::granted);  // refreshed at 9
  EXPECT_EQ(t.check(s, std::nullopt, t0 + 28min), Access::expired_session);
  EXPECT_EQ(t.check(s, std::nullopt, t0 + 28min), Access::unknown_session);  // gone
  EXPECT_EQ(t.size(), 0u);
}

TEST(DashboardAuth, SessionsEndAtTheirMaxAgeEvenWhenUsed) {
  auto t = table({std::chrono::hours(1), std::chrono::hours(2), 16});
  auto t0 = Clock::now();
  auto s = *t.login(kToken, t0);
  for (int m = 30; m < 120; m += 30)
    EXPECT_EQ(t.check(s, std::nullopt, t0 + std::chrono::minutes(m)), Access::granted);
  EXPECT_EQ(t.check(s, std::nullopt, t0 + 2h), Access::expired_session);
}

TEST(DashboardAuth, LogoutEndsOnlyThatSession) {
  auto t = table();
  auto now = Clock::now();
  auto a = *t.login(kToken, now);
  auto b = *t.login(kToken, now);
  EXPECT_NE(a, b);
  t.logout(a);
  t.logout("never-made");
  EXPECT_EQ(t.check(a, std::nullopt, now), Access::unknown_session);
  EXPECT_EQ(t.check(b, std::nullopt, now), Access::granted);
}

TEST(DashboardAuth, AFullTableDropsTheLeastRecentlyUsed) {
  auto t = table({std::chrono::hours(1), std::chrono::hours(2), 3});
  auto t0 = Clock::now();
  auto a = *t.login(kToken, t0);
  auto b = *t.login(kToken, t0 + 1s);
  auto c = *t.login(kToken, t0 + 2s);
  EXPECT_EQ(t.check(a, std::nullopt, t0 + 3s), Access::granted);  // a is now the newest
  auto d = *t.login(kToken, t0 + 4s);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.check(b, std::nullopt, t0 + 5s), Access::unknown_session);
  for (const auto& s : {a, c, d}) EXPECT_EQ(t.check(s, std::nullopt, t0 + 5s), Access::granted);
}

TEST(DashboardAuth, EachSessionHasItsOwnCsrfTokenGoneWithIt) {
  auto t = table();
  auto now = Clock::now();
  auto a = *t.login(kToken, now);
  auto b = *t.login(kToken, now);
  auto ca = t.csrf_token(a);
  auto cb = t.csrf_token(b);
  ASSERT_TRUE(ca && cb);
  EXPECT_NE(*ca, *cb);
  EXPECT_NE(*ca, a);
  EXPECT_EQ(t.csrf_token(a), ca);  // stable for the session's life
  EXPECT_FALSE(t.csrf_token("never-made"));
  EXPECT_FALSE(t.csrf_token(kToken));  // the job's token is no session
  t.logout(a);
  EXPECT_FALSE(t.csrf_token(a));
}

TEST(DashboardAuth, ExpiredSessionsAreSweptAtLogin) {
  auto t = table({std::chrono::minutes(1), std::chrono::hours(2), 100});
  auto t0 = Clock::now();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(t.login(kToken, t0).ok());
  EXPECT_EQ(t.size(), 10u);
  ASSERT_TRUE(t.login(kToken, t0 + 2min).ok());
  EXPECT_EQ(t.size(), 1u);
}

TEST(DashboardAuth, ARepeatedSessionIdIsRefused) {
  auto ids =
      std::make_shared<std::vector<std::string>>(std::vector<std::string>{"s1", "c1", "s1", "c2"});
  SessionTable t(kToken, {}, [ids] {
    auto id = ids->front();
    ids->erase(ids->begin());
    return id;
  });
  auto now = Clock::now();
  ASSERT_TRUE(t.login(kToken, now).ok());
  EXPECT_FALSE(t.login(kToken, now).ok());
  EXPECT_EQ(t.size(), 1u);
  // A generator that repeats itself would make the CSRF token the session's id.
  SessionTable same(kToken, {}, [] { return std::string("same"); });
  EXPECT_FALSE(same.login(kToken, now).ok());
  SessionTable empty(kToken, {}, [] { return std::string(); });
  EXPECT_FALSE(empty.login(kToken, now).ok());
}

// The token's file: made once (0600), read back, refused when damaged.
TEST(DashboardToken, MadeOnceThenKept) {
  char tmpl[] = "/tmp/atl-token-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string path = dir + "/dashboard-token";
  auto made = atl::os::load_or_make_token_file(path);
  ASSERT_TRUE(made.ok()) << made.error();
  EXPECT_EQ(made->size(), 43u);
  EXPECT_TRUE(validate_dashboard_token(*made).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto again = atl::os::load_or_make_token_file(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *made);
  EXPECT_NE(atl::os::random_token(43), atl::os::random_token(43));
  for (char c : atl::os::random_token(500))
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)));

  std::ofstream(path) << "short\n";
  auto bad = atl::os::load_token_file(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find(path), std::string::npos);
  EXPECT_NE(bad.error().find("too short"), std::string::npos);
  EXPECT_FALSE(atl::os::load_or_make_token_file(path).ok());  // damaged: never replaced
  auto missing = atl::os::load_token_file(dir + "/none");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("cannot read"), std::string::npos);
  EXPECT_FALSE(atl::os::load_or_make_token_file(dir + "/no/such/dir/token").ok());
  std::system(("rm -rf " + dir).c_str());
}

TEST(LoginNext, OnlyTheDashboardsOwnPaths) {
  EXPECT_EQ(login_next("/ray/"), "/ray/");
  EXPECT_EQ(login_next("/"), "/");
  EXPECT_EQ(login_next("/#logs/driver"), "/#logs/driver");
  EXPECT_EQ(login_next("/ray/?a=1&b=%2F"), "/ray/?a=1&b=%2F");
  for (const char* bad : {"", "ray/", "//evil.example/", "/\\evil", "https://evil/",
                          "javascript:alert(1)", "/ray/\"><script>", "/a b", "/a\nb", "/ray/'x"})
    EXPECT_EQ(login_next(bad), "") << bad;
  EXPECT_EQ(login_next("/" + std::string(600, 'a')), "");
}

TEST(LoginLink, TheTokenIsPercentEncodedButItsSafeCharactersAndNextIsKept) {
  EXPECT_EQ(login_link("https://h:1", "abc-DEF_0.9~"), "https://h:1/login?token=abc-DEF_0.9~");
  EXPECT_EQ(login_link("https://h:1", "a+b/c=&d e"),
            "https://h:1/login?token=a%2Bb%2Fc%3D%26d%20e");
  EXPECT_EQ(login_link("https://h:1", "tok", "/ray/"), "https://h:1/login?token=tok&next=/ray/");
}
