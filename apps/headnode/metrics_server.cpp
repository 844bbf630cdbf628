#include "metrics_server.hpp"

#include <httplib.h>

#include <thread>

#include "http_socket.hpp"

namespace atl::headnode {

struct MetricsServer::Impl {
  std::shared_ptr<HeadQueries> queries;
  httplib::Server server;
  std::thread thread;
};

MetricsServer::MetricsServer(std::shared_ptr<HeadQueries> queries)
    : impl_(std::make_unique<Impl>()) {
  impl_->queries = std::move(queries);
  use_port_exclusively(impl_->server);
  impl_->server.new_task_queue = [] { return new GrowingTaskQueue(8); };
  impl_->server.Get("/metrics",
                    [q = impl_->queries](const httplib::Request&, httplib::Response& res) {
                      auto text = q->prometheus();
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
}

Expected<std::uint16_t> MetricsServer::start(const std::string& bind, int port) {
  int bound = port == 0 ? impl_->server.bind_to_any_port(bind.c_str())
                        : (impl_->server.bind_to_port(bind.c_str(), port) ? port : -1);
  if (bound <= 0) return make_error("cannot listen on " + bind + ":" + std::to_string(port));
  widen_backlog(impl_->server);
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  return static_cast<std::uint16_t>(bound);
}

}  // namespace atl::headnode
