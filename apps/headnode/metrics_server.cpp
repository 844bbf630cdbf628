#include "metrics_server.hpp"

#include <httplib.h>

#include <caf/all.hpp>
#include <future>
#include <thread>

#include "atl/actors/messages.hpp"
#include "atl/core/metrics.hpp"

namespace atl::headnode {

namespace {

constexpr auto kScrapeTimeout = std::chrono::seconds(5);

// A scrape's two questions, asked from an actor (HTTP threads only
// anon_send to it: CAF 0.17 and long-lived foreign threads, see libatl).
using ScrapeJob = std::shared_ptr<std::promise<Expected<std::string>>>;

}  // namespace
}  // namespace atl::headnode

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(atl::headnode::ScrapeJob)

namespace atl::headnode {

struct MetricsServer::Impl {
  caf::actor asker;
  httplib::Server server;
  std::thread thread;
};

MetricsServer::MetricsServer(caf::actor_system& sys, const caf::actor& supervisor,
                             const caf::actor& sink)
    : impl_(std::make_unique<Impl>()) {
  impl_->asker = sys.spawn([supervisor, sink](caf::event_based_actor* self) -> caf::behavior {
    return {[self, supervisor, sink](ScrapeJob& job) {
      self->request(supervisor, kScrapeTimeout, info_atom::value)
          .then(
              [self, sink, job](std::string& status) {
                self->request(sink, kScrapeTimeout, metrics_atom::value)
                    .then([job, status](
                              std::string& logs) { job->set_value(prometheus_text(status, logs)); },
                          [job](caf::error& err) {
                            job->set_value(
                                make_error("the log sink did not answer: " + caf::to_string(err)));
                          });
              },
              [job](caf::error& err) {
                job->set_value(make_error("the supervisor did not answer: " + caf::to_string(err)));
              });
    }};
  });
  impl_->server.Get("/metrics", [asker = impl_->asker](const httplib::Request&,
                                                       httplib::Response& res) {
    auto job = std::make_shared<std::promise<Expected<std::string>>>();
    auto answer = job->get_future();
    caf::anon_send(asker, job);
    if (answer.wait_for(kScrapeTimeout + std::chrono::seconds(1)) != std::future_status::ready) {
      res.status = 503;
      res.set_content("the supervisor did not answer in time\n", "text/plain");
      return;
    }
    auto text = answer.get();
    if (!text) {
      res.status = 503;
      res.set_content(text.error() + "\n", "text/plain");
      return;
    }
    res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
  });
  impl_->server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("not found: the head serves /metrics\n", "text/plain");
  });
}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  caf::anon_send_exit(impl_->asker, caf::exit_reason::user_shutdown);
}

Expected<std::uint16_t> MetricsServer::start(const std::string& bind, int port) {
  int bound = port == 0 ? impl_->server.bind_to_any_port(bind.c_str())
                        : (impl_->server.bind_to_port(bind.c_str(), port) ? port : -1);
  if (bound <= 0) return make_error("cannot listen on " + bind + ":" + std::to_string(port));
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  return static_cast<std::uint16_t>(bound);
}

}  // namespace atl::headnode
