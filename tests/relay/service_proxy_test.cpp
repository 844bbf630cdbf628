// The dashboard's relay (apps/headnode/service_proxy) between real HTTP
// servers on 127.0.0.1: a service with the behaviours Ray's dashboard has
// (small JSON, big downloads, endless streams, redirects), the relay in
// front as the dashboard mounts it, and a client.
#include "service_proxy.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

struct Servers {
  httplib::Server service;
  httplib::Server front;
  std::thread service_thread, front_thread;
  int service_port = 0, front_port = 0;
  std::unique_ptr<atl::headnode::ServiceProxy> proxy;
  std::atomic<int> endless_open{0};
  std::atomic<int> endless_closed{0};
  std::atomic<int> slow_waiting{0};
  std::atomic<bool> slow_release{false};

  explicit Servers(bool service_up = true) {
    service.Get("/api/version", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"ray_version": "test"})", "application/json");
    });
    // What the service was sent: method, target, body and headers.
    auto echo = [](const httplib::Request& req, httplib::Response& res) {
      std::string out = req.method + " " + req.path;
      for (const auto& [k, v] : req.params)
        out += (out.find('?') == std::string::npos ? "?" : "&") + k + "=" + v;
      out += "\nbody=" + req.body + "\n";
      for (const auto& [k, v] : req.headers) out += k + ": " + v + "\n";
      res.set_header("Set-Cookie", "ray-authentication-token=leak; Path=/");
      res.set_header("X-Service", "yes");
      res.set_content(out, "text/plain");
    };
    service.Get("/echo", echo);
    service.Post("/echo", echo);
    service.Delete("/echo", echo);
    service.Get("/moved", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/#/jobs", 302);
    });
    service.Get("/missing", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content("no such thing", "text/plain");
    });
    // 8 MiB in 64 KiB pieces: more than the relay's queue.
    service.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("application/octet-stream",
                                       [](size_t offset, httplib::DataSink& sink) {
                                         if (offset >= (8u << 20)) {
                                           sink.done();
                                           return true;
                                         }
                                         std::string piece(64 << 10, '\0');
                                         for (size_t i = 0; i < piece.size(); ++i)
                                           piece[i] = static_cast<char>((offset + i) % 251);
                                         return sink.write(piece.data(), piece.size());
                                       });
    });
    // A line every 50 ms, forever (a log follow), until its client leaves.
    service.Get("/endless", [this](const httplib::Request&, httplib::Response& res) {
      ++endless_open;
      res.set_chunked_content_provider(
          "text/plain",
          [](size_t, httplib::DataSink& sink) {
            std::this_thread::sleep_for(50ms);
            static const char kLine[] = "tick\n";
            return sink.write(kLine, sizeof kLine - 1);
          },
          [this](bool) { ++endless_closed; });
    });
    // Answers once released (or after 20 s): a service that takes its time.
    service.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      ++slow_waiting;
      for (int i = 0; i < 2000 && !slow_release.load(); ++i) std::this_thread::sleep_for(10ms);
      res.set_content("done", "text/plain");
    });
    service.new_task_queue = [] { return new httplib::ThreadPool(64); };
    service_port = service.bind_to_any_port("127.0.0.1");
    service_thread = std::thread([this] { service.listen_after_bind(); });
    running(service);
    if (!service_up) {
      // The port was served and let go: nobody answers there.
      service.stop();
      service_thread.join();
    }
    proxy = std::make_unique<atl::headnode::ServiceProxy>(atl::headnode::ServiceTarget{
        "the test service", "/svc", "127.0.0.1", static_cast<std::uint16_t>(service_port),
        "Bearer service-token", "the test's own client"});
    auto relay = [this](const httplib::Request& req, httplib::Response& res) {
      proxy->handle(req, res);
    };
    front.set_default_headers(
        {{"Content-Security-Policy", "default-src 'self'"}, {"X-Frame-Options", "DENY"}});
    front.new_task_queue = [] { return new httplib::ThreadPool(64); };
    front.Get(R"(/svc/.*)", relay);
    front.Post(R"(/svc/.*)", relay);
    front.Delete(R"(/svc/.*)", relay);
    front_port = front.bind_to_any_port("127.0.0.1");
    front_thread = std::thread([this] { front.listen_after_bind(); });
    running(front);
  }

  // A server's stop() does nothing before its loop runs: wait for it.
  static void running(httplib::Server& server) {
    while (!server.is_running()) std::this_thread::sleep_for(1ms);
  }

  ~Servers() {
    front.stop();
    if (front_thread.joinable()) front_thread.join();
    proxy.reset();
    service.stop();
    if (service_thread.joinable()) service_thread.join();
  }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", front_port);
    c.set_read_timeout(60, 0);
    return c;
  }
};

}  // namespace

TEST(ServiceProxy, AnAnswerComesBackWithTheServicesStatusTypeAndHeaders) {
  Servers s;
  auto c = s.client();
  auto r = c.Get("/svc/api/version");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"({"ray_version": "test"})");
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  // The front's script policy is not the service's; its frame and sniffing
  // rules hold for the service's pages too.
  EXPECT_EQ(r->get_header_value("Content-Security-Policy"), "frame-ancestors 'self'");
  EXPECT_EQ(r->get_header_value("X-Frame-Options"), "SAMEORIGIN");
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  auto missing = c.Get("/svc/missing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, "no such thing");
}

TEST(ServiceProxy, TheServiceGetsItsOwnCredentialsNeverTheBrowsers) {
  Servers s;
  auto c = s.client();
  auto r = c.Post("/svc/echo?limit=5",
                  httplib::Headers{{"Cookie", "atl_session=secret-session"},
                                   {"Authorization", "Bearer atl-dashboard-token"},
                                   {"X-Forwarded-For", "6.6.6.6"}},
                  R"({"entrypoint": "echo hi"})", "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("POST /echo?limit=5"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find(R"(body={"entrypoint": "echo hi"})"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("Authorization: Bearer service-token"), std::string::npos) << r->body;
  EXPECT_EQ(r->body.find("atl-dashboard-token"), std::string::npos) << r->body;
  EXPECT_EQ(r->body.find("secret-session"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("X-Forwarded-Prefix: /svc"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("X-Forwarded-For: 127.0.0.1\n"), std::string::npos) << r->body;
  EXPECT_EQ(r->body.find("6.6.6.6"), std::string::npos) << r->body;  // a forged chain stays out
  // The service's cookie stays behind; its other headers come through.
  EXPECT_FALSE(r->has_header("Set-Cookie"));
  EXPECT_EQ(r->get_header_value("X-Service"), "yes");
  auto del = c.Delete("/svc/echo");
  ASSERT_TRUE(del);
  EXPECT_NE(del->body.find("DELETE /echo"), std::string::npos) << del->body;
}

TEST(ServiceProxy, ARedirectStaysUnderThePrefix) {
  Servers s;
  auto r = s.client().Get("/svc/moved");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 302);
  EXPECT_EQ(r->get_header_value("Location"), "/svc/#/jobs");
}

TEST(ServiceProxy, ABigDownloadStreamsWhole) {
  Servers s;
  auto r = s.client().Get("/svc/big");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  ASSERT_EQ(r->body.size(), 8u << 20);
  for (size_t i = 0; i < r->body.size(); i += 4099)
    ASSERT_EQ(r->body[i], static_cast<char>(i % 251)) << "byte " << i;
}

// A follower that leaves ends the service's stream too: nothing keeps
// reading from the service for a browser that is gone.
TEST(ServiceProxy, AClientThatLeavesAnEndlessStreamEndsItAtTheService) {
  Servers s;
  {
    auto c = s.client();
    int got = 0;
    auto r = c.Get("/svc/endless", [&](const char* data, size_t n) {
      got += static_cast<int>(std::count(data, data + n, '\n'));
      return got < 5;  // five lines, then leave
    });
    EXPECT_FALSE(r);  // cancelled by us
    EXPECT_GE(got, 5);
  }
  EXPECT_EQ(s.endless_open.load(), 1);
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (s.endless_closed.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(s.endless_closed.load(), 1);
}

TEST(ServiceProxy, AServiceThatIsDownIsNamedInA502) {
  Servers s(/*service_up=*/false);
  auto r = s.client().Get("/svc/api/version");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 502);
  EXPECT_NE(r->body.find("the test service (127.0.0.1:" + std::to_string(s.service_port) +
                         ") did not answer"),
            std::string::npos)
      << r->body;
}

TEST(ServiceProxy, AWebSocketUpgradeIsRefusedSaying501) {
  Servers s;
  auto r = s.client().Get("/svc/api/jobs/x/logs/tail",
                          httplib::Headers{{"Upgrade", "websocket"}, {"Connection", "Upgrade"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 501);
  EXPECT_NE(r->body.find("WebSocket"), std::string::npos) << r->body;
}

TEST(ServiceProxy, ATargetThatIsNotUnderThePrefixIsRefused) {
  Servers s;
  httplib::Server::Handler direct = [&s](const httplib::Request& req, httplib::Response& res) {
    s.proxy->handle(req, res);
  };
  httplib::Request req;
  req.method = "GET";
  req.target = "/other/api";
  httplib::Response res;
  direct(req, res);
  EXPECT_EQ(res.status, 400);
  EXPECT_NE(res.body.find("not under /svc"), std::string::npos) << res.body;
}

// A target that walks off once decoded (TensorBoard's POST allow-list saw
// the raw one, the service resolved it) never reaches the service.
TEST(ServiceProxy, ATargetThatWalksOffIsRefusedBeforeTheService) {
  Servers s;
  auto c = s.client();
  for (const char* bad : {"/svc/echo/../moved", "/svc/echo/%2e%2e/moved", "/svc/a%2fb"}) {
    auto r = c.Post(bad, "{}", "application/json");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_NE(r->body.find("is not relayed"), std::string::npos) << r->body;
  }
}

// Each relayed request holds one of the dashboard's threads while the
// service takes its time (300 slow ones took them all): 16 at once per
// session; the 17th is told so at once, another session is not.
TEST(ServiceProxy, ASessionHasAtMostSixteenRelayedRequestsAtOnce) {
  Servers s;
  std::vector<std::thread> slow;
  for (int i = 0; i < 16; ++i)
    slow.emplace_back([&s] {
      auto c = s.client();
      auto r = c.Get("/svc/slow", httplib::Headers{{"Cookie", "atl_session=A"}});
      EXPECT_TRUE(r && r->status == 200);
    });
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (s.slow_waiting.load() < 16 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(s.slow_waiting.load(), 16);
  auto c = s.client();
  const auto asked = std::chrono::steady_clock::now();
  auto over = c.Get("/svc/slow", httplib::Headers{{"Cookie", "atl_session=A"}});
  ASSERT_TRUE(over) << httplib::to_string(over.error());
  EXPECT_EQ(over->status, 503);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 5s);
  EXPECT_EQ(over->get_header_value("Retry-After"), "1");
  EXPECT_NE(over->body.find("this session has 16 relayed requests under way"), std::string::npos)
      << over->body;
  auto other = c.Get("/svc/api/version", httplib::Headers{{"Cookie", "atl_session=B"}});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200);
  s.slow_release = true;
  for (auto& t : slow) t.join();
  // Their places are free again.
  auto again = c.Get("/svc/api/version", httplib::Headers{{"Cookie", "atl_session=A"}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
}
