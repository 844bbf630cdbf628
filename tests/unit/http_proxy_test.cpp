// The rules of the dashboard's proxy to a service under a path (Ray's
// dashboard at /ray/): targets, and the headers each way.
#include "atl/core/http_proxy.hpp"

#include <gtest/gtest.h>

using namespace atl;

namespace {

std::string value(const HeaderList& h, const std::string& name) {
  std::string out;
  for (const auto& [k, v] : h)
    if (k == name) out += (out.empty() ? "" : "|") + v;
  return out;
}

bool has(const HeaderList& h, const std::string& name) {
  for (const auto& [k, v] : h)
    if (k == name) return true;
  return false;
}

}  // namespace

TEST(ProxiedTarget, StripsThePrefixAndKeepsTheQuery) {
  EXPECT_EQ(*proxied_target("/ray/api/jobs/?limit=5", "/ray"), "/api/jobs/?limit=5");
  EXPECT_EQ(*proxied_target("/ray/", "/ray"), "/");
  EXPECT_EQ(*proxied_target("/ray", "/ray"), "/");
  EXPECT_EQ(*proxied_target("/ray?x=1", "/ray"), "/?x=1");
  EXPECT_EQ(*proxied_target("/ray/static/js/main.js", "/ray"), "/static/js/main.js");
  // Escapes pass as they came: the service decodes its own path.
  EXPECT_EQ(*proxied_target("/ray/api/v0/logs/file?filename=a%20b", "/ray"),
            "/api/v0/logs/file?filename=a%20b");
}

TEST(ProxiedTarget, RefusesWhatIsNotUnderThePrefixOrCannotBeARequestLine) {
  EXPECT_FALSE(proxied_target("/api/status", "/ray"));
  EXPECT_FALSE(proxied_target("/rayx/api", "/ray"));
  EXPECT_FALSE(proxied_target("/ra", "/ray"));
  EXPECT_FALSE(proxied_target("", "/ray"));
  auto crlf = proxied_target("/ray/a\r\nX-Evil: 1", "/ray");
  ASSERT_FALSE(crlf);
  EXPECT_NE(crlf.error().find("control or space"), std::string::npos);
  EXPECT_FALSE(proxied_target("/ray/a b", "/ray"));
  EXPECT_FALSE(proxied_target(std::string("/ray/a\0b", 8), "/ray"));
  EXPECT_FALSE(proxied_target("/ray/\x7f", "/ray"));
}

// The allow-list (TensorBoard's POST reads) looks at the raw target; the
// service resolves dot segments and decodes separators after it: such a
// target is refused, so what is allowed is what arrives.
TEST(ProxiedTarget, RefusesPathsThatWalkOffOnceDecoded) {
  for (const char* bad :
       {"/tb/data/plugin/scalars/../../../evil", "/tb/data/./x", "/tb/data/%2e%2e/x",
        "/tb/data/%2E%2e/x", "/tb/data/.%2e/x", "/tb/data/a%2fb", "/tb/data/a%2Fb",
        "/tb/data/a%5cb", "/tb/data/a\\b", "/tb/..", "/tb/data/%00x"}) {
    auto r = proxied_target(bad, "/tb");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("'.' or '..' segments or an encoded separator"), std::string::npos)
        << r.error();
  }
  // Dots inside names, escapes of other characters and dots in the query pass.
  EXPECT_EQ(*proxied_target("/tb/data/run.1/..x/a%20b?path=../x", "/tb"),
            "/data/run.1/..x/a%20b?path=../x");
  EXPECT_EQ(*proxied_target("/tb/data/%2e%2ex", "/tb"), "/data/%2e%2ex");
}

TEST(UpstreamHeaders, ForwardingHeadersAreAtlsOwn) {
  HeaderList in = {{"X-Forwarded-For", "6.6.6.6"},
                   {"Forwarded", "for=6.6.6.6"},
                   {"X-Forwarded-Host", "evil"},
                   {"X-Forwarded-Proto", "http"},
                   {"X-Real-IP", "6.6.6.6"}};
  auto out = upstream_request_headers(in, "", "10.0.0.7", "/tb");
  for (const char* gone : {"Forwarded", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-IP"})
    EXPECT_FALSE(has(out, gone)) << gone;
  EXPECT_EQ(value(out, "X-Forwarded-For"), "10.0.0.7");
}

TEST(UpstreamHeaders, AtlsCredentialsNeverReachTheServiceAndItsOwnAreAdded) {
  HeaderList in = {{"Cookie", "atl_session=S"},
                   {"Authorization", "Bearer atl-dashboard-token"},
                   {"X-Ray-Authorization", "Bearer forged"},
                   {"Accept", "application/json"},
                   {"User-Agent", "curl/7.88"}};
  auto out = upstream_request_headers(in, "Bearer ray-token", "10.0.0.7", "/ray");
  EXPECT_FALSE(has(out, "Cookie"));
  EXPECT_FALSE(has(out, "X-Ray-Authorization"));
  EXPECT_EQ(value(out, "Authorization"), "Bearer ray-token");
  EXPECT_EQ(value(out, "Accept"), "application/json");
  EXPECT_EQ(value(out, "User-Agent"), "curl/7.88");
  EXPECT_EQ(value(out, "X-Forwarded-For"), "10.0.0.7");
  EXPECT_EQ(value(out, "X-Forwarded-Prefix"), "/ray");
}

TEST(UpstreamHeaders, WithoutAServiceTokenNoAuthorizationIsSent) {
  auto out = upstream_request_headers({{"authorization", "Bearer atl"}}, "", "", "/tb");
  EXPECT_FALSE(has(out, "Authorization"));
  EXPECT_FALSE(has(out, "authorization"));
  EXPECT_FALSE(has(out, "X-Forwarded-For"));
}

TEST(UpstreamHeaders, HopByHopAndFramingHeadersAreEachLegsOwn) {
  HeaderList in = {{"Connection", "keep-alive, X-Secret-Hop"},
                   {"X-Secret-Hop", "1"},
                   {"Keep-Alive", "timeout=5"},
                   {"Host", "head:8266"},
                   {"Content-Length", "12"},
                   {"Transfer-Encoding", "chunked"},
                   {"TE", "trailers"},
                   {"Upgrade", "websocket"},
                   {"Proxy-Authorization", "Basic x"},
                   {"Content-Type", "application/json"},
                   {"Accept-Encoding", "gzip, br"},
                   {"X-Forwarded-For", "1.2.3.4"},
                   {"X-Forwarded-Prefix", "/elsewhere"}};
  auto out = upstream_request_headers(in, "", "10.0.0.7", "/ray");
  for (const char* gone :
       {"Connection", "X-Secret-Hop", "Keep-Alive", "Host", "Content-Length", "Transfer-Encoding",
        "TE", "Upgrade", "Proxy-Authorization", "Accept-Encoding"})
    EXPECT_FALSE(has(out, gone)) << gone;
  EXPECT_EQ(value(out, "Content-Type"), "application/json");
  // Who asked is atl's word alone: a client's claim (a forged chain) and a
  // prefix it claims are not kept.
  EXPECT_EQ(value(out, "X-Forwarded-For"), "10.0.0.7");
  EXPECT_EQ(value(out, "X-Forwarded-Prefix"), "/ray");
}

TEST(DownstreamHeaders, TheServicesCookiesAndFramingStayBehind) {
  HeaderList in = {{"Set-Cookie", "ray-authentication-token=T; Path=/"},
                   {"Content-Type", "text/html"},
                   {"Content-Length", "100"},
                   {"Transfer-Encoding", "chunked"},
                   {"connection", "close, X-Hop"},
                   {"X-Hop", "1"},
                   {"Cache-Control", "no-cache"}};
  auto out = downstream_response_headers(in, "/ray");
  EXPECT_FALSE(has(out, "Set-Cookie"));
  EXPECT_FALSE(has(out, "Content-Length"));
  EXPECT_FALSE(has(out, "Transfer-Encoding"));
  EXPECT_FALSE(has(out, "connection"));
  EXPECT_FALSE(has(out, "X-Hop"));
  EXPECT_EQ(value(out, "Content-Type"), "text/html");
  EXPECT_EQ(value(out, "Cache-Control"), "no-cache");
}

TEST(DownstreamHeaders, ARedirectToTheServicesOwnPathStaysUnderThePrefix) {
  EXPECT_EQ(value(downstream_response_headers({{"Location", "/#/jobs"}}, "/ray"), "Location"),
            "/ray/#/jobs");
  EXPECT_EQ(value(downstream_response_headers({{"Location", "/"}}, "/ray"), "Location"), "/ray/");
  // Relative, other hosts and scheme-relative addresses are left alone.
  EXPECT_EQ(value(downstream_response_headers({{"Location", "jobs"}}, "/ray"), "Location"), "jobs");
  EXPECT_EQ(
      value(downstream_response_headers({{"Location", "https://ray.io/x"}}, "/ray"), "Location"),
      "https://ray.io/x");
  EXPECT_EQ(value(downstream_response_headers({{"Location", "//evil/x"}}, "/ray"), "Location"),
            "//evil/x");
}

TEST(AsksUpgrade, OnlyANonEmptyUpgradeHeader) {
  EXPECT_TRUE(asks_upgrade({{"Upgrade", "websocket"}, {"Connection", "Upgrade"}}));
  EXPECT_TRUE(asks_upgrade({{"upgrade", "h2c"}}));
  EXPECT_FALSE(asks_upgrade({{"Upgrade", " "}}));
  EXPECT_FALSE(asks_upgrade({{"Connection", "keep-alive"}}));
  EXPECT_FALSE(asks_upgrade({}));
}

TEST(HttpProxy, AMultipartFormIsWrittenAgainFieldByFieldAsABrowserWould) {
  std::vector<FormPart> parts{{"requests", "", "", R"([{"plugin":"scalars","tag":"loss"}])"},
                              {"up\"load", "a\nb.txt", "text/plain", "x"}};
  EXPECT_EQ(multipart_body(parts, "B"),
            "--B\r\nContent-Disposition: form-data; name=\"requests\"\r\n\r\n"
            "[{\"plugin\":\"scalars\",\"tag\":\"loss\"}]\r\n"
            "--B\r\nContent-Disposition: form-data; name=\"up%22load\"; filename=\"a%0Ab.txt\"\r\n"
            "Content-Type: text/plain\r\n\r\nx\r\n"
            "--B--\r\n");
  EXPECT_EQ(multipart_body({}, "B"), "--B--\r\n");
}

TEST(HttpProxy, AMultipartBoundaryIsInNoFieldAndWithinTheRfcsLength) {
  const std::string seeded = multipart_boundary({}, 42);
  EXPECT_EQ(seeded.rfind("atl-", 0), 0u);
  EXPECT_EQ(seeded.size(), 20u);
  // A field that holds the first boundary gets a longer one.
  std::vector<FormPart> parts{{"f", "", "", "xx" + seeded + "yy"}};
  const std::string other = multipart_boundary(parts, 42);
  EXPECT_EQ(other.find(seeded), 0u);
  EXPECT_GT(other.size(), seeded.size());
  EXPECT_LE(other.size(), 70u);
  EXPECT_EQ(parts[0].content.find(other), std::string::npos);
}
