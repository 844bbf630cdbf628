#include "metrics_server.hpp"

#include <httplib.h>

#include <thread>

#include "http_socket.hpp"

namespace atl::headnode {

struct MetricsServer::Impl {
  std::shared_ptr<HeadQueries> queries;
  LobbyOf lobby;  // released after the thread below is joined
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
  impl_->lobby.closing();
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Expected<std::uint16_t> MetricsServer::start(const std::string& bind, int port) {
  auto bound = bind_server(impl_->server, bind, port, false, "/metrics", nullptr);
  if (bound) impl_->lobby.bound(impl_->server);
  if (bound) impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  return bound;
}

}  // namespace atl::headnode
