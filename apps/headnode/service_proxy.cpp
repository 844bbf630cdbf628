#include "service_proxy.hpp"

#include <httplib.h>

#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "atl/core/http_proxy.hpp"

namespace atl::headnode {

namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(5);
constexpr auto kHeadTimeout = std::chrono::seconds(30);
constexpr auto kBodyIdle = std::chrono::seconds(60);
constexpr auto kWriteTimeout = std::chrono::seconds(30);
constexpr std::size_t kMaxQueued = 1 << 20;
// How often a waiting browser leg looks whether its browser is still there.
constexpr auto kSinkPoll = std::chrono::seconds(1);
// Relayed requests at once, per session and in all: each holds one of the
// dashboard's threads for as long as the service takes (300 slow ones took
// them all). Over either, 503 at once.
constexpr int kMaxPerSession = 16;
constexpr int kMaxInFlight = 48;

void fail(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_header("Connection", "close");
  res.set_content(nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                          nlohmann::json::error_handler_t::replace),
                  "application/json");
}

HeaderList to_list(const httplib::Headers& h) { return HeaderList(h.begin(), h.end()); }

bool is_content_type(const std::string& name) {
  static const std::string kName = "content-type";
  if (name.size() != kName.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(name[i])) != kName[i]) return false;
  return true;
}

// One request's way to the service and back: the upstream leg fills it on
// its own thread, the browser's leg drains it.
struct Exchange {
  std::mutex m;
  std::condition_variable cv;
  bool head = false;       // status and headers are in
  bool done = false;       // the upstream leg ended
  bool cancelled = false;  // the browser's leg ended first
  int status = 0;
  HeaderList headers;
  std::string error;  // why no answer came, when none did
  std::deque<std::string> chunks;
  std::size_t queued = 0;
  std::unique_ptr<httplib::Client> client;
  std::thread thread;
  std::once_flag finished;
  std::string session;  // whose it is, for the per-session count

  // Ends the upstream leg (a blocked read included) and waits for it.
  void finish() {
    std::call_once(finished, [this] {
      {
        std::lock_guard<std::mutex> lock(m);
        cancelled = true;
      }
      cv.notify_all();
      client->stop();
      if (thread.joinable()) thread.join();
    });
  }
};

}  // namespace

struct ServiceProxy::Impl {
  ServiceTarget target;
  std::mutex m;
  std::set<std::shared_ptr<Exchange>> live;
  std::map<std::string, int> per_session;  // live exchanges by session

  void forget(const std::shared_ptr<Exchange>& ex) {
    ex->finish();
    std::lock_guard<std::mutex> lock(m);
    if (live.erase(ex) == 0) return;  // forgotten already
    auto it = per_session.find(ex->session);
    if (it != per_session.end() && --it->second == 0) per_session.erase(it);
  }

  // A place for one more exchange of `session`, or why not.
  std::optional<std::string> admit(const std::string& session) {
    std::lock_guard<std::mutex> lock(m);
    if (static_cast<int>(live.size()) >= kMaxInFlight)
      return std::to_string(kMaxInFlight) + " relayed requests are under way already";
    auto it = per_session.find(session);
    if (it != per_session.end() && it->second >= kMaxPerSession)
      return "this session has " + std::to_string(kMaxPerSession) +
             " relayed requests under way already";
    return std::nullopt;
  }

  std::shared_ptr<Exchange> start(httplib::Request up, std::string session);
  // `self` is this: the browser's leg may end after the call returns.
  static void answer(const std::shared_ptr<Impl>& self, const std::shared_ptr<Exchange>& ex,
                     httplib::Response& res);
};

ServiceProxy::ServiceProxy(ServiceTarget target) : impl_(std::make_shared<Impl>()) {
  impl_->target = std::move(target);
}

ServiceProxy::~ServiceProxy() {
  std::set<std::shared_ptr<Exchange>> live;
  {
    std::lock_guard<std::mutex> lock(impl_->m);
    live.swap(impl_->live);
  }
  for (const auto& ex : live) ex->finish();
}

const ServiceTarget& ServiceProxy::target() const { return impl_->target; }

std::shared_ptr<Exchange> ServiceProxy::Impl::start(httplib::Request up, std::string session) {
  auto ex = std::make_shared<Exchange>();
  ex->session = std::move(session);
  ex->client = std::make_unique<httplib::Client>(target.host, target.port);
  auto& c = *ex->client;
  c.set_url_encode(false);  // the browser's target goes as it came
  c.set_connection_timeout(kConnectTimeout.count(), 0);
  c.set_read_timeout(kBodyIdle.count(), 0);
  c.set_write_timeout(kWriteTimeout.count(), 0);
  Exchange* e = ex.get();
  up.response_handler = [e](const httplib::Response& r) {
    std::lock_guard<std::mutex> lock(e->m);
    e->status = r.status;
    e->headers = to_list(r.headers);
    e->head = true;
    e->cv.notify_all();
    return !e->cancelled;
  };
  up.content_receiver = [e](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    std::unique_lock<std::mutex> lock(e->m);
    e->cv.wait(lock, [e] { return e->queued < kMaxQueued || e->cancelled; });
    if (e->cancelled) return false;
    e->chunks.emplace_back(data, n);
    e->queued += n;
    e->cv.notify_all();
    return true;
  };
  {
    std::lock_guard<std::mutex> lock(m);
    live.insert(ex);
    ++per_session[ex->session];
  }
  ex->thread = std::thread([e, up = std::move(up)]() mutable {
    httplib::Response r;
    httplib::Error err = httplib::Error::Success;
    const bool ok = e->client->send(up, r, err);
    std::lock_guard<std::mutex> lock(e->m);
    if (!ok) e->error = httplib::to_string(err);
    e->done = true;
    e->cv.notify_all();
  });
  return ex;
}

void ServiceProxy::handle(const httplib::Request& req, httplib::Response& res) {
  const ServiceTarget& t = impl_->target;
  auto path = proxied_target(req.target, t.prefix);
  if (!path) return fail(res, 400, path.error());
  const HeaderList in = to_list(req.headers);
  // httplib compresses a streamed answer by itself when the browser takes br
  // or gzip, over whatever encoding the service chose (TensorBoard's pages
  // came out as garbage in Chromium): the service's bytes go as they came.
  // httplib decides from the request after this handler; the request is
  // httplib's own (non-const) object, handed here as const.
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
  if (asks_upgrade(in))
    return fail(res, 501,
                t.name +
                    ": a WebSocket through the dashboard is not supported (use the "
                    "service from inside the job, e.g. atlctl run)");
  // The session is its cookie (the dashboard let only logged-in ones here);
  // without one, the address it came from.
  const std::string session =
      req.has_header("Cookie") ? req.get_header_value("Cookie") : req.remote_addr;
  if (auto full = impl_->admit(session)) {
    res.set_header("Retry-After", "1");
    return fail(res, 503, t.name + ": " + *full + "; try again when some have ended");
  }
  httplib::Request up;
  up.method = req.method;
  up.path = *path;
  for (auto& [k, v] : upstream_request_headers(in, t.auth, req.remote_addr, t.prefix))
    up.headers.emplace(std::move(k), std::move(v));
  up.body = req.body;
  if (req.is_multipart_form_data()) {
    // httplib parsed the body into its fields and kept no bytes of it
    // (TensorBoard's Time Series page asks this way): written again, under
    // a boundary of the relay's.
    std::vector<FormPart> parts;
    for (const auto& [name, f] : req.files)
      parts.push_back({f.name, f.filename, f.content_type, f.content});
    const std::string boundary = multipart_boundary(parts, std::random_device{}());
    up.body = multipart_body(parts, boundary);
    for (auto it = up.headers.begin(); it != up.headers.end();)
      it = is_content_type(it->first) ? up.headers.erase(it) : std::next(it);
    up.headers.emplace("Content-Type", "multipart/form-data; boundary=" + boundary);
  }
  auto ex = impl_->start(std::move(up), session);
  Impl::answer(impl_, ex, res);
}

void ServiceProxy::Impl::answer(const std::shared_ptr<Impl>& self,
                                const std::shared_ptr<Exchange>& ex, httplib::Response& res) {
  const ServiceTarget& target = self->target;
  const std::string where =
      target.name + " (" + target.host + ":" + std::to_string(target.port) + ")";
  {
    std::unique_lock<std::mutex> lock(ex->m);
    ex->cv.wait_for(lock, kHeadTimeout, [&] { return ex->head || ex->done; });
    if (!ex->head) {
      const std::string why = ex->done ? ex->error : "no answer within 30s";
      const int status = ex->done ? 502 : 504;
      lock.unlock();
      self->forget(ex);
      return fail(res, status, where + " did not answer: " + why);
    }
  }
  std::string content_type = "application/octet-stream";
  HeaderList headers;
  bool small = false;
  std::string body, cut_off;
  {
    std::lock_guard<std::mutex> lock(ex->m);
    res.status = ex->status;
    headers = downstream_response_headers(ex->headers, target.prefix);
    small = ex->done;  // all of it is here already (an error, a short answer)
    if (small)
      for (auto& c : ex->chunks) body += c;
    cut_off = ex->error;
  }
  if (small && !cut_off.empty()) {
    self->forget(ex);
    return fail(res, 502, where + " broke off its answer: " + cut_off);
  }
  // The dashboard's script policy is not the service's (its pages run their
  // own scripts), but atl's frame and sniffing rules hold for them too: no
  // other site frames a relayed page, and none of its bytes is taken for
  // another type. A policy the service sends of its own is added (a browser
  // enforces both).
  res.headers.erase("Content-Security-Policy");
  for (const auto& [k, v] : headers) {
    if (is_content_type(k)) {
      content_type = v;
      continue;
    }
    res.headers.erase(k);
  }
  for (const auto& [k, v] : headers)
    if (!is_content_type(k)) res.headers.emplace(k, v);
  res.headers.erase("X-Frame-Options");
  res.set_header("X-Frame-Options", "SAMEORIGIN");
  res.headers.emplace("Content-Security-Policy", "frame-ancestors 'self'");
  res.headers.erase("X-Content-Type-Options");
  res.set_header("X-Content-Type-Options", "nosniff");
  if (small) {
    self->forget(ex);
    if (res.status == 204 || res.status == 304) return;
    res.set_content(body, content_type);
    return;
  }
  res.set_chunked_content_provider(
      content_type,
      [ex](std::size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> lock(ex->m);
        ex->cv.wait_for(lock, kSinkPoll, [&] { return !ex->chunks.empty() || ex->done; });
        if (!ex->chunks.empty()) {
          std::string piece = std::move(ex->chunks.front());
          ex->chunks.pop_front();
          ex->queued -= piece.size();
          ex->cv.notify_all();
          lock.unlock();
          return piece.empty() || sink.write(piece.data(), piece.size());
        }
        if (ex->done) {
          const bool whole = ex->error.empty();
          lock.unlock();
          if (!whole) return false;  // cut off: the browser must not take it as whole
          sink.done();
          return true;
        }
        lock.unlock();
        return sink.is_writable();
      },
      [self, ex](bool) { self->forget(ex); });
}

}  // namespace atl::headnode
