#include "dashboard_server.hpp"

#include <fcntl.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <vector>

#include "atl/core/dashboard_auth.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/core/sse.hpp"
#include "atl/core/websocket.hpp"
#include "atl/os/log_files.hpp"
#include "atl/os/secrets.hpp"
#include "http_socket.hpp"
#include "terminal_socket.hpp"

// The page's files, assembled into the binary (dashboard/assets.S.in).
#define ATL_ASSET(name) extern "C" const char atl_asset_##name[], atl_asset_##name##_end[];
ATL_ASSET(index_html)
ATL_ASSET(login_html)
ATL_ASSET(app_js)
ATL_ASSET(style_css)
ATL_ASSET(chart_js)
ATL_ASSET(xterm_js)
ATL_ASSET(xterm_css)
#undef ATL_ASSET

namespace atl::headnode {

namespace {

#define ATL_ASSET_VIEW(name) \
  std::string_view(atl_asset_##name, static_cast<size_t>(atl_asset_##name##_end - atl_asset_##name))

constexpr const char* kCookie = "atl_session";
// Every follower holds one HTTP thread; the pool has room for them all and
// for the page's own requests beside them.
constexpr std::size_t kMaxFollowers = 200;
constexpr std::size_t kThreads = kMaxFollowers + 56;
constexpr auto kFollowPoll = std::chrono::milliseconds(500);
constexpr auto kKeepAlive = std::chrono::seconds(2);
constexpr auto kFollowPing = std::chrono::seconds(15);
// A follower gets at most kFollowChunk per kFollowPoll (128 KiB/s, 1300
// lines of 100 bytes: more than a page can show; bench/dashboard); one more than kFollowMaxLag
// behind skips to the last kFollowKeep bytes, and is told how much it missed.
constexpr std::int64_t kFollowChunk = 64 << 10;
constexpr std::int64_t kFollowMaxLag = 1 << 20;
constexpr std::int64_t kFollowKeep = 16 << 10;

std::string json_error(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace);
}

void send_json(httplib::Response& res, const std::string& body) {
  res.set_content(body, "application/json");
}

void fail(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  send_json(res, json_error(message));
}

std::string chunk_json(const os::LogChunk& c) {
  return nlohmann::json{{"text", c.bytes}, {"next_offset", c.next_offset}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A query parameter that must be a non-negative integer (absent: fallback).
Expected<std::int64_t> int_param(const httplib::Request& req, const char* name,
                                 std::int64_t fallback) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  if (v.empty() || v.size() > 15 || v.find_first_not_of("0123456789") != std::string::npos)
    return make_error(std::string(name) + ": '" + v + "' is not a non-negative integer");
  return std::stoll(v);
}

bool is_public(const std::string& path) {
  return path == "/login" || path == "/static/style.css" || path == "/favicon.ico";
}

bool under(const std::string& path, const std::string& prefix) {
  return path == prefix || path.rfind(prefix + "/", 0) == 0;
}

// A value for the login page's hidden field (login_next allows no quote,
// bracket or ampersand entity that would need escaping).
std::string next_of(const httplib::Request& req) {
  return req.has_param("next") ? login_next(req.get_param_value("next")) : "";
}

}  // namespace

struct DashboardServer::Impl {
  LobbyOf lobby;  // destroyed last: after the server's thread is joined
  DashboardConfig config;
  // Services relayed under a prefix (ray mode: Ray's dashboard at /ray).
  std::vector<std::unique_ptr<ServiceProxy>> relays;
  std::unique_ptr<httplib::Server> server;
  std::shared_ptr<HeadQueries> queries;
  std::shared_ptr<TerminalRelays> terminals;  // null: no web terminal
  std::thread thread;
  std::mutex mutex;  // guards sessions
  SessionTable sessions;
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> followers{0};
  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  // Readable once the server stops: terminals waiting in poll() end at once
  // (the head's exit does not wait for their next look at the clock).
  int stop_pipe[2] = {-1, -1};

  explicit Impl(DashboardConfig c)
      : config(std::move(c)),
        sessions(config.token, SessionLimits{}, [] { return os::random_token(43); }) {
    if (::pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) stop_pipe[0] = stop_pipe[1] = -1;
  }
  ~Impl() {
    for (int fd : stop_pipe)
      if (fd >= 0) ::close(fd);
  }

  std::string log_path(const std::string& stream) const {
    return config.logs_dir + "/" + stream + ".log";
  }

  // Attempt K's directory (0: the current attempt's links, logs/ itself).
  std::string attempt_dir(std::int64_t attempt) const {
    return attempt > 0 ? config.logs_dir + "/attempt-" + std::to_string(attempt) : config.logs_dir;
  }

  Access access(const httplib::Request& req) {
    std::optional<std::string> cookie;
    if (req.has_header("Cookie")) cookie = cookie_value(req.get_header_value("Cookie"), kCookie);
    std::optional<std::string> bearer;
    if (req.has_header("Authorization"))
      bearer = bearer_token(req.get_header_value("Authorization"));
    std::lock_guard<std::mutex> lock(mutex);
    return sessions.check(cookie, bearer, SessionTable::Clock::now());
  }

  // Sleeps up to `d`, less when the server is stopping; false then.
  bool pause(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(stop_mutex);
    return !stop_cv.wait_for(lock, d, [this] { return stopping.load(); });
  }

  void login_page(httplib::Response& res, const std::string& error, const std::string& next) {
    std::string page(ATL_ASSET_VIEW(login_html));
    auto put = [&page](std::string_view mark, const std::string& text) {
      if (auto at = page.find(mark); at != std::string::npos) page.replace(at, mark.size(), text);
    };
    put("<!--job-->", config.job_id);  // a validated job id: [a-z0-9-]
    put("<!--error-->",
        error.empty() ? "" : "<p class=\"error\" id=\"login-error\">" + error + "</p>");
    put("<!--next-->",
        next.empty() ? "" : "<input type=\"hidden\" name=\"next\" value=\"" + next + "\">");
    res.set_content(page, "text/html; charset=utf-8");
  }

  void log_in(const std::string& token, const std::string& next, httplib::Response& res) {
    Expected<std::string> session = make_error("");
    {
      std::lock_guard<std::mutex> lock(mutex);
      session = sessions.login(token, SessionTable::Clock::now());
    }
    if (!session) {
      res.status = 401;
      login_page(res, "Wrong token.", next);
      return;
    }
    std::string cookie = std::string(kCookie) + "=" + *session + "; Path=/; HttpOnly; SameSite=Lax";
    if (config.tls) cookie += "; Secure";
    res.set_header("Set-Cookie", cookie);
    res.set_redirect(next.empty() ? "/" : next, 303);
  }

  const ServiceProxy* relay_of(const std::string& path) const {
    for (const auto& r : relays)
      if (under(path, r->target().prefix)) return r.get();
    return nullptr;
  }

  // Whose terminal it is, for the timeline: the session by a digest (never
  // the cookie itself) and the browser's address.
  static std::string who(const std::string& session, const httplib::Request& req) {
    static const char* hex = "0123456789abcdef";
    std::string digest = ws::sha1(session), shown;
    for (int i = 0; i < 4; ++i)
      shown += {hex[(static_cast<unsigned char>(digest[i]) >> 4) & 15],
                hex[static_cast<unsigned char>(digest[i]) & 15]};
    return "session " + shown + " from " + req.remote_addr;
  }

  void routes();
  void terminal(const httplib::Request& req, httplib::Response& res);
  void follow(const std::string& stream, std::int64_t offset, bool stamped, httplib::Response& res);
};

void DashboardServer::Impl::routes() {
  httplib::Server& s = *server;
  s.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                         {"X-Frame-Options", "DENY"},
                         {"Referrer-Policy", "no-referrer"},
                         {"Cache-Control", "no-store"},
                         {"Content-Security-Policy",
                          "default-src 'self'; img-src 'self' data:; style-src 'self' "
                          "'unsafe-inline'; frame-ancestors 'none'"}});
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (is_public(req.path)) return httplib::Server::HandlerResponse::Unhandled;
    Access a = access(req);
    if (a == Access::granted) return httplib::Server::HandlerResponse::Unhandled;
    // A stranger's connection is not kept alive: it would hold a thread.
    res.set_header("Connection", "close");
    const ServiceProxy* relayed = relay_of(req.path);
    if (req.path.rfind("/api/", 0) == 0 || req.path == "/metrics" ||
        (relayed && req.path.rfind(relayed->target().prefix + "/api/", 0) == 0)) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"atl\"");
      fail(res, 401, describe(a));
    } else if (relayed) {
      // A relayed service's pages: refused as such (a 401), with the form
      // that logs in and comes back here.
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer realm=\"atl\"");
      login_page(res, "", relayed->target().prefix + "/");
    } else {
      res.set_redirect("/login", 303);
    }
    return httplib::Server::HandlerResponse::Handled;
  });

  s.Get("/login", [this](const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("token")) return log_in(req.get_param_value("token"), next_of(req), res);
    login_page(res, "", next_of(req));
  });
  s.Post("/login", [this](const httplib::Request& req, httplib::Response& res) {
    httplib::Params form;
    httplib::detail::parse_query_text(req.body, form);
    auto it = form.find("token");
    auto next = form.find("next");
    log_in(it == form.end() ? "" : it->second, next == form.end() ? "" : login_next(next->second),
           res);
  });
  s.Post("/logout", [this](const httplib::Request& req, httplib::Response& res) {
    if (auto id = cookie_value(req.get_header_value("Cookie"), kCookie)) {
      std::lock_guard<std::mutex> lock(mutex);
      sessions.logout(*id);
    }
    res.set_header("Set-Cookie", std::string(kCookie) + "=; Path=/; Max-Age=0");
    res.set_redirect("/login", 303);
  });
  // The session's CSRF token (for the web terminal's handshake) and whether
  // the head offers terminals. Only the dashboard's own pages can read it.
  s.Get("/api/session", [this](const httplib::Request& req, httplib::Response& res) {
    std::optional<std::string> csrf;
    if (auto id = cookie_value(req.get_header_value("Cookie"), kCookie)) {
      std::lock_guard<std::mutex> lock(mutex);
      csrf = sessions.csrf_token(*id);
    }
    nlohmann::json j{{"terminal", terminals != nullptr},
                     {"tensorboard", relay_of("/tensorboard/") != nullptr}};
    if (csrf) j["csrf"] = *csrf;
    send_json(res, j.dump());
  });
  s.Get(R"(/api/terminal/([A-Za-z0-9._-]{1,253}))",
        [this](const httplib::Request& req, httplib::Response& res) { terminal(req, res); });
  s.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });

  auto asset = [&s](const char* path, std::string_view body, const char* type) {
    s.Get(path, [body, type](const httplib::Request&, httplib::Response& res) {
      res.set_content(body.data(), body.size(), type);
    });
  };
  asset("/", ATL_ASSET_VIEW(index_html), "text/html; charset=utf-8");
  asset("/static/app.js", ATL_ASSET_VIEW(app_js), "text/javascript; charset=utf-8");
  asset("/static/style.css", ATL_ASSET_VIEW(style_css), "text/css; charset=utf-8");
  asset("/static/chart.min.js", ATL_ASSET_VIEW(chart_js), "text/javascript; charset=utf-8");
  asset("/static/xterm.js", ATL_ASSET_VIEW(xterm_js), "text/javascript; charset=utf-8");
  asset("/static/xterm.css", ATL_ASSET_VIEW(xterm_css), "text/css; charset=utf-8");

  auto from_actors = [this](Expected<std::string> (HeadQueries::*ask)()) {
    return [this, ask](const httplib::Request&, httplib::Response& res) {
      auto body = ((*queries).*ask)();
      if (!body) return fail(res, 503, body.error());
      send_json(res, *body);
    };
  };
  // ?ranks=N&rank_offset=K&pods=N&pod_offset=K: a page of the ranks and pods
  // (a big job's are tens of thousands); runs=N&run_offset=K: of the debug
  // runs, counted from the newest (up to --history are kept); without them, all.
  // trend=1: the page's running ranks with their figures over time too.
  s.Get("/api/status", [this](const httplib::Request& req, httplib::Response& res) {
    StatusPage page;
    std::int32_t* fields[] = {&page.rank_limit, &page.rank_offset, &page.pod_limit,
                              &page.pod_offset, &page.run_limit,   &page.run_offset,
                              &page.trend};
    const char* names[] = {"ranks", "rank_offset", "pods", "pod_offset",
                           "runs",  "run_offset",  "trend"};
    for (int i = 0; i < 7; ++i) {
      auto v = int_param(req, names[i], *fields[i]);
      if (v && *v > std::numeric_limits<std::int32_t>::max())
        v = make_error(std::string(names[i]) + ": '" + req.get_param_value(names[i]) +
                       "' is too large");
      if (!v) return fail(res, 400, v.error());
      *fields[i] = static_cast<std::int32_t>(*v);
    }
    auto body = queries->status(page);
    if (!body) return fail(res, 503, body.error());
    send_json(res, *body);
  });
  s.Get("/api/events", from_actors(&HeadQueries::events));
  s.Get("/api/progress", from_actors(&HeadQueries::progress));
  // Every rank's stack now (?ranks=all|1,2|0-7), grouped: atlctl diagnose's
  // answer. Reads only; up to 30 s (each node takes its stacks within 5 s).
  s.Get("/api/diagnose", [this](const httplib::Request& req, httplib::Response& res) {
    std::int32_t code = 0;
    auto body =
        queries->diagnose(req.has_param("ranks") ? req.get_param_value("ranks") : "", &code);
    if (!body) return fail(res, 503, body.error());
    if (code == wire(ReplyCode::usage)) return fail(res, 400, *body);
    if (code != 0) return fail(res, 409, *body);
    send_json(res, *body);
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    auto text = queries->prometheus();
    if (!text) {
      res.status = 503;
      return res.set_content(text.error() + "\n", "text/plain");
    }
    res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
  });

  // ?attempt=K: that attempt's logs (logs/attempt-K), else the current one's.
  s.Get("/api/logs", [this](const httplib::Request& req, httplib::Response& res) {
    auto attempt = int_param(req, "attempt", 0);
    if (!attempt) return fail(res, 400, attempt.error());
    nlohmann::json j = nlohmann::json::array();
    for (const auto& f : os::list_logs(attempt_dir(*attempt)))
      j.push_back({{"stream", f.stream}, {"bytes", f.bytes}});
    send_json(res, j.dump());
  });
  // Stream names are what the log sink writes: [a-z0-9-], so never a path.
  // ?attempt=K (else the current attempt), ?stamped=1 (each line's time in
  // front), and where to start: ?tail=N lines, ?since=UNIX_MS, or ?offset=.
  s.Get(R"(/api/logs/([a-z0-9-]{1,64}))", [this](const httplib::Request& req,
                                                 httplib::Response& res) {
    auto attempt = int_param(req, "attempt", 0);
    if (!attempt) return fail(res, 400, attempt.error());
    const std::string path = attempt_dir(*attempt) + "/" + std::string(req.matches[1]) + ".log";
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      return fail(res, 404,
                  "no log named '" + std::string(req.matches[1]) + "'" +
                      (*attempt > 0 ? " in attempt " + std::to_string(*attempt) : ""));
    const bool stamped = req.has_param("stamped") && req.get_param_value("stamped") == "1";
    auto stamp = [&](os::LogChunk chunk) {
      if (stamped)
        chunk.bytes = os::stamp_log(
            chunk.bytes, path, chunk.next_offset - static_cast<std::int64_t>(chunk.bytes.size()));
      return chunk;
    };
    if (req.has_param("tail")) {
      auto lines = int_param(req, "tail", 0);
      if (!lines) return fail(res, 400, lines.error());
      return send_json(
          res, chunk_json(stamp(os::tail_log(path, std::min<std::int64_t>(*lines, 100000)))));
    }
    auto offset = int_param(req, "offset", 0);
    auto max = int_param(req, "max", 1 << 20);
    auto since = int_param(req, "since", 0);
    if (!offset) return fail(res, 400, offset.error());
    if (!max) return fail(res, 400, max.error());
    if (!since) return fail(res, 400, since.error());
    if (req.has_param("since") && req.has_param("offset"))
      return fail(res, 400, "since and offset cannot be combined (choose one start)");
    const std::int64_t from = req.has_param("since") ? os::log_offset_since(path, *since) : *offset;
    send_json(res, chunk_json(stamp(os::read_log(path, from, *max))));
  });
  // ?q=TEXT over the whole log (attempt K's with ?attempt=K), ASCII letters
  // in any case: how many lines hold it, and the first ?max=N (1,000; at
  // most 10,000) with their line numbers and offsets (a jump reads from one).
  s.Get(R"(/api/logs/([a-z0-9-]{1,64})/search)", [this](const httplib::Request& req,
                                                        httplib::Response& res) {
    auto attempt = int_param(req, "attempt", 0);
    if (!attempt) return fail(res, 400, attempt.error());
    auto max = int_param(req, "max", 1000);
    if (!max) return fail(res, 400, max.error());
    const std::string q = req.has_param("q") ? req.get_param_value("q") : "";
    if (q.empty() || q.size() > 1000)
      return fail(res, 400, "q: give the text to look for (1 to 1,000 bytes)");
    const std::string stream = req.matches[1];
    const std::string path = attempt_dir(*attempt) + "/" + stream + ".log";
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return fail(res, 404, "no log named '" + stream + "'");
    const auto found =
        os::search_log(path, q, static_cast<std::size_t>(std::clamp<std::int64_t>(*max, 0, 10000)));
    nlohmann::json matches = nlohmann::json::array();
    for (const auto& m : found.shown)
      matches.push_back({{"line", m.line}, {"offset", m.offset}, {"text", m.text}});
    send_json(res,
              nlohmann::json{
                  {"total", found.total}, {"lines", found.lines}, {"matches", std::move(matches)}}
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  });
  // The whole file, as a download (attempt K's with ?attempt=K).
  s.Get(R"(/api/logs/([a-z0-9-]{1,64})/download)",
        [this](const httplib::Request& req, httplib::Response& res) {
          auto attempt = int_param(req, "attempt", 0);
          if (!attempt) return fail(res, 400, attempt.error());
          const std::string stream = req.matches[1];
          const std::string path = attempt_dir(*attempt) + "/" + stream + ".log";
          auto file = std::make_shared<std::ifstream>(path, std::ios::binary);
          if (!*file) return fail(res, 404, "no log named '" + stream + "'");
          const std::string name =
              (*attempt > 0 ? "attempt-" + std::to_string(*attempt) + "-" : "") + stream + ".log";
          res.set_header("Content-Disposition", "attachment; filename=\"" + name + "\"");
          res.set_header("Cache-Control", "no-store");
          res.set_chunked_content_provider(
              "text/plain; charset=utf-8", [file](size_t, httplib::DataSink& sink) {
                char buf[1 << 16];
                file->read(buf, sizeof buf);
                if (file->gcount() > 0 && !sink.write(buf, static_cast<size_t>(file->gcount())))
                  return false;
                if (!*file) sink.done();
                return true;
              });
        });
  s.Get(R"(/api/logs/([a-z0-9-]{1,64})/follow)",
        [this](const httplib::Request& req, httplib::Response& res) {
          auto offset = int_param(req, "offset", 0);
          if (!offset) return fail(res, 400, offset.error());
          // A browser's EventSource that reconnects says where it was.
          if (req.has_header("Last-Event-ID")) {
            auto id = parse_event_id(req.get_header_value("Last-Event-ID"));
            if (!id) return fail(res, 400, "Last-Event-ID: not an offset");
            offset = *id;
          }
          struct stat st {};
          if (::stat(log_path(req.matches[1]).c_str(), &st) != 0)
            return fail(res, 404, "no log named '" + std::string(req.matches[1]) + "'");
          follow(req.matches[1], *offset,
                 req.has_param("stamped") && req.get_param_value("stamped") == "1", res);
        });
  // A burn's or check's figures per round, as atl-burn handed them to the
  // supervisor (the burn page's charts; never its stdout parsed again).
  s.Get(R"(/api/runs/(\d{1,9})/figures)",
        [this](const httplib::Request& req, httplib::Response& res) {
          bool missing = false;
          auto body = queries->run_figures(std::stoi(req.matches[1]), &missing);
          if (!body) return fail(res, missing ? 404 : 503, body.error());
          send_json(res, *body);
        });

  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty()) fail(res, 404, "no such page: " + req.path);
  });
  s.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        fail(res, 500, "the dashboard failed on this request: " + what);
      });
}

// Server-Sent Events (core/sse.hpp): each new piece of the log as an event of
// its lines with the next offset as its id (and "skipped" before it when the
// follower fell too far behind),
// a comment line every kFollowPing so that a client that left is noticed.
void DashboardServer::Impl::follow(const std::string& stream, std::int64_t offset, bool stamped,
                                   httplib::Response& res) {
  if (followers.fetch_add(1) >= kMaxFollowers) {
    followers.fetch_sub(1);
    return fail(res, 503,
                "too many log followers (" + std::to_string(kMaxFollowers) + "): try again later");
  }
  struct Follow {
    std::string path;
    std::int64_t offset;
    std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();
    bool started = false;
    bool stamped = false;  // each line's time in front
  };
  auto f = std::make_shared<Follow>(Follow{log_path(stream), offset});
  f->stamped = stamped;
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, f](size_t, httplib::DataSink& sink) {
        // Between two reads, always a pause: a fast log is sent in pieces.
        if (f->started && !pause(kFollowPoll)) return false;
        f->started = true;
        while (!stopping.load()) {
          auto chunk =
              os::read_log_following(f->path, f->offset, kFollowChunk, kFollowMaxLag, kFollowKeep);
          if (!chunk.bytes.empty() || chunk.skipped > 0) {
            f->offset = chunk.next_offset;
            f->last_write = std::chrono::steady_clock::now();
            if (f->stamped)
              chunk.bytes =
                  os::stamp_log(chunk.bytes, f->path,
                                chunk.next_offset - static_cast<std::int64_t>(chunk.bytes.size()));
            std::string event = sse_log_event(chunk.bytes, chunk.next_offset, chunk.skipped);
            return sink.write(event.data(), event.size());
          }
          if (std::chrono::steady_clock::now() - f->last_write >= kFollowPing) {
            f->last_write = std::chrono::steady_clock::now();
            static constexpr char kPing[] = ": ping\n\n";
            return sink.write(kPing, sizeof kPing - 1);
          }
          if (!pause(kFollowPoll)) break;
        }
        return false;
      },
      [this](bool) { followers.fetch_sub(1); });
}

// GET /api/terminal/POD: a WebSocket to a shell in POD (terminal_socket.hpp).
// Only a logged-in browser session, from the dashboard's own page: its Origin
// is this dashboard, and it sends the session's CSRF token (?csrf=) that only
// the dashboard's pages can read. Each refusal is an HTTP answer before any
// upgrade: 401 no session, 403 a foreign Origin or a wrong token, 400 not a
// WebSocket, 404 no terminal on this head, 409 refused (off, the pod's
// limit, no such pod), 503 the pod could not start one.
void DashboardServer::Impl::terminal(const httplib::Request& req, httplib::Response& res) {
  res.set_header("Connection", "close");
  if (!terminals)
    return fail(res, 404, "the web terminal is off on this job (headnode --web-terminal off)");
  auto session = cookie_value(req.get_header_value("Cookie"), kCookie);
  std::optional<std::string> csrf;
  if (session) {
    std::lock_guard<std::mutex> lock(mutex);
    csrf = sessions.csrf_token(*session);
  }
  if (!csrf) return fail(res, 401, "a terminal needs a logged-in session");
  const std::string host = req.get_header_value("Host");
  const std::string origin = req.get_header_value("Origin");
  const std::string own = std::string(config.tls ? "https" : "http") + "://" + host;
  if (host.empty() || origin != own)
    return fail(res, 403,
                "a terminal opens only from the dashboard's own page (Origin '" + origin +
                    "' is not " + own + ")");
  if (!req.has_param("csrf") || !same_secret(req.get_param_value("csrf"), *csrf))
    return fail(res, 403, "a terminal needs the session's CSRF token (?csrf=)");
  auto header = [&req](const char* name) -> std::optional<std::string> {
    if (!req.has_header(name)) return std::nullopt;
    return req.get_header_value(name);
  };
  ws::UpgradeRequest up{req.method, header("Upgrade"), header("Connection"),
                        header("Sec-WebSocket-Version"), header("Sec-WebSocket-Key")};
  if (auto ok = ws::check_upgrade(up); !ok) return fail(res, 400, ok.error());
  auto rows = int_param(req, "rows", 24), cols = int_param(req, "cols", 80);
  if (!rows || !cols || *rows < 1 || *cols < 1 || *rows > 1000 || *cols > 1000)
    return fail(res, 400, "rows and cols: whole numbers from 1 to 1000");
  auto conn = raw_connection_of(req);
  if (!conn) return fail(res, 500, "cannot find this request's connection");
  auto opened =
      terminals->open(std::string(req.matches[1]), who(*session, req), static_cast<int>(*rows),
                      static_cast<int>(*cols), [this] { return stopping.load(); });
  if (auto* refusal = std::get_if<TerminalRefusal>(&opened))
    return fail(res, refusal->http_status, refusal->line);
  auto& link = *std::get<std::unique_ptr<TerminalLink>>(opened);
  const std::string cookie = *session;
  serve_terminal(
      *conn, *up.key, link, stop_pipe[0], [this, &cookie]() -> std::optional<std::string> {
        if (stopping) return std::string("the head is stopping");
        std::lock_guard<std::mutex> lock(mutex);
        if (sessions.check(cookie, std::nullopt, SessionTable::Clock::now()) != Access::granted)
          return std::string("the session ended");
        return std::nullopt;
      });
}

DashboardServer::DashboardServer(DashboardConfig config)
    : impl_(std::make_unique<Impl>(std::move(config))) {
  if (impl_->config.tls)
    impl_->server = std::make_unique<httplib::SSLServer>(impl_->config.tls->cert.c_str(),
                                                         impl_->config.tls->key.c_str());
  else
    impl_->server = std::make_unique<httplib::Server>();
  impl_->server->new_task_queue = [] { return new GrowingTaskQueue(kThreads); };
  // An idle keep-alive connection holds a thread: a page's next request
  // comes within a second or opens a new connection.
  impl_->server->set_keep_alive_timeout(kKeepAlive.count());
  impl_->server->set_read_timeout(kKeepAlive.count(), 0);
  use_port_exclusively(*impl_->server);
  impl_->routes();
}

DashboardServer::~DashboardServer() {
  {
    std::lock_guard<std::mutex> lock(impl_->stop_mutex);
    impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  if (impl_->stop_pipe[1] >= 0) (void)!::write(impl_->stop_pipe[1], "s", 1);
  // Before stop(): cpp-httplib's stop() does nothing until its thread has
  // begun to listen, so a job that ended at once (a driver of `true` under
  // load) left the thread to listen after it, in the lobby's accept loop,
  // forever (the head never exited). The lobby, closed first, ends that loop
  // whenever it runs.
  impl_->lobby.closing();
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

const char* DashboardServer::scheme() const { return impl_->config.tls ? "https" : "http"; }

Expected<std::uint16_t> DashboardServer::bind(std::string* note) {
  if (!impl_->server->is_valid())
    return make_error("cannot load the job's certificate for HTTPS from " + impl_->config.tls->dir);
  auto bound = bind_server(*impl_->server, impl_->config.bind, impl_->config.port,
                           !impl_->config.port_given, "the dashboard", note);
  if (bound) impl_->lobby.bound(*impl_->server);
  if (bound && note && !note->empty()) *note += " (give --dashboard-port to choose)";
  return bound;
}

// A relayed service is read through the dashboard: GET (and HEAD). What acts
// (Ray's job API's POST and DELETE run and stop commands) stays inside the
// job, as everything else that acts: the dashboard is read-only. The
// service's pages use relative paths, so its HTML is never rewritten.
void DashboardServer::relay(ServiceTarget target) {
  httplib::Server& s = *impl_->server;
  impl_->relays.push_back(std::make_unique<ServiceProxy>(std::move(target)));
  ServiceProxy* proxy = impl_->relays.back().get();
  const std::string prefix = proxy->target().prefix;
  s.Get(prefix, [prefix](const httplib::Request&, httplib::Response& res) {
    res.set_redirect(prefix + "/", 301);
  });
  const std::string pattern = prefix + "/.*";
  s.Get(pattern,
        [proxy](const httplib::Request& req, httplib::Response& res) { proxy->handle(req, res); });
  // Reads by POST first (httplib tries a method's routes in order).
  for (const auto& read : proxy->target().post_reads)
    s.Post(prefix + read, [proxy](const httplib::Request& req, httplib::Response& res) {
      proxy->handle(req, res);
    });
  auto refuse = [proxy](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Allow", "GET, HEAD");
    fail(res, 405,
         req.method + " to " + proxy->target().name +
             ": it is read-only through the dashboard (act from inside the job: " +
             proxy->target().inside + ")");
  };
  s.Post(pattern, refuse);
  s.Put(pattern, refuse);
  s.Patch(pattern, refuse);
  s.Delete(pattern, refuse);
}

void DashboardServer::offer_terminals(std::shared_ptr<TerminalRelays> relays) {
  impl_->terminals = std::move(relays);
}

void DashboardServer::serve(std::shared_ptr<HeadQueries> queries) {
  impl_->queries = std::move(queries);
  // Test-only (ATL_TEST_DASHBOARD_LATE_LISTEN=MS): the thread begins to
  // listen that late, as a thread scheduled late under load does.
  const char* late = std::getenv("ATL_TEST_DASHBOARD_LATE_LISTEN");
  const int late_ms = late ? std::atoi(late) : 0;
  impl_->thread = std::thread([this, late_ms] {
    if (late_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
    impl_->server->listen_after_bind();
  });
}

}  // namespace atl::headnode
