#include "atl/actors/local_door.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <caf/all.hpp>
#include <list>
#include <mutex>
#include <thread>

#include "atl/actors/exit_words.hpp"
#include "atl/core/door_frame.hpp"
#include "atl/os/local_door.hpp"

namespace atl {

namespace {

// A connection that sends nothing for this long is closed (atlctl sends its
// requests back to back; `logs -f` polls every few hundred ms).
constexpr auto kIdleLimit = std::chrono::minutes(10);

struct Connection {
  int fd = -1;
  std::thread thread;
  std::atomic<bool> done{false};
  // The request in flight (a response id of `waiting`'s), so closing the
  // door can answer it with an error instead of waiting for its timeout.
  std::mutex mutex;
  caf::actor waiting;
  caf::message_id mid;
  bool closing = false;
};

}  // namespace

Expected<std::string> door_message_bytes(caf::actor_system& sys, const caf::message& msg) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  if (auto err = sink(const_cast<caf::message&>(msg))) return make_error(sys.render(err));
  return std::string(buf.begin(), buf.end());
}

Expected<caf::message> door_message(caf::actor_system& sys, const std::string& bytes) {
  caf::message msg;
  caf::binary_deserializer source{sys, bytes.data(), bytes.size()};
  if (auto err = source(msg)) return make_error(sys.render(err));
  return msg;
}

struct LocalDoor::State {
  caf::actor_system& sys;
  caf::actor supervisor;
  std::string ca_pem;  // the job's CA; empty for an --insecure head
  int listener = -1;
  int wake = -1;  // an eventfd: the accept thread's stop
  std::thread acceptor;
  std::mutex mutex;
  std::list<std::unique_ptr<Connection>> connections;

  State(caf::actor_system& s, caf::actor sup, std::string ca)
      : sys(s), supervisor(std::move(sup)), ca_pem(std::move(ca)) {}

  // The hello: the caller holds the job's CA (see local_door.hpp).
  DoorAnswer greet(const std::string& hello) {
    const std::string word = std::string(kDoorHello) + "\n";
    if (hello.compare(0, word.size(), word) != 0) return {false, "not a door hello"};
    if (hello.substr(word.size()) != ca_pem)
      return {false, "another job's credentials (or none): the door is the job's own"};
    return {true, ""};
  }

  DoorAnswer ask(Connection& c, const DoorRequest& request) {
    auto msg = door_message(sys, request.body);
    if (!msg) return {false, "the door could not read the request"};
    caf::scoped_actor self{sys};
    auto handle = self->request<caf::message_priority::high>(supervisor, request.timeout, *msg);
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      if (c.closing) return {false, "the head is ending"};
      c.waiting = caf::actor{self};
      c.mid = handle.id();
    }
    DoorAnswer answer;
    handle.receive(
        [&](caf::error& err) {
          answer = {false, error_words(err, sys)};
        },
        caf::others >> [&](caf::message_view& reply) -> caf::result<caf::message> {
          auto bytes = door_message_bytes(sys, reply.move_content_to_message());
          answer = bytes ? DoorAnswer{true, std::move(*bytes)}
                         : DoorAnswer{false, "the door could not write the supervisor's answer"};
          return caf::message{};
        });
    std::lock_guard<std::mutex> lock(c.mutex);
    c.waiting = nullptr;
    return answer;
  }

  void serve(Connection& c) {
    DoorFrameReader reader;
    std::string frame;
    bool greeted = false;
    while (true) {
      auto got =
          os::read_door_frame(c.fd, reader, frame, std::chrono::steady_clock::now() + kIdleLimit);
      if (got != os::DoorRead::frame) break;
      if (!greeted) {
        auto answer = greet(frame);
        if (!os::write_door(c.fd, encode_door_frame(encode_door_answer(answer))) || !answer.ok)
          break;
        greeted = true;
        continue;
      }
      auto request = decode_door_request(frame);
      DoorAnswer answer = request ? ask(c, *request) : DoorAnswer{false, request.error()};
      if (!os::write_door(c.fd, encode_door_frame(encode_door_answer(answer)))) break;
      if (!request) break;
    }
    ::shutdown(c.fd, SHUT_RDWR);
    c.done = true;
  }

  // Joins the connections that ended (under mutex).
  void reap() {
    for (auto it = connections.begin(); it != connections.end();) {
      if ((*it)->done) {
        (*it)->thread.join();
        ::close((*it)->fd);
        it = connections.erase(it);
      } else {
        ++it;
      }
    }
  }

  void accept_loop() {
    while (true) {
      pollfd fds[2] = {{listener, POLLIN, 0}, {wake, POLLIN, 0}};
      if (::poll(fds, 2, 1000) < 0 && errno != EINTR) return;
      if (fds[1].revents) return;
      std::lock_guard<std::mutex> lock(mutex);
      reap();
      if (!(fds[0].revents & POLLIN)) continue;
      int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      if (!os::peer_is_trusted(fd) || connections.size() >= kMaxConnections) {
        ::close(fd);
        continue;
      }
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      auto* raw = c.get();
      c->thread = std::thread([this, raw] { serve(*raw); });
      connections.push_back(std::move(c));
    }
  }
};

LocalDoor::LocalDoor(std::unique_ptr<State> state) : state_(std::move(state)) {}

Expected<std::unique_ptr<LocalDoor>> LocalDoor::serve(caf::actor_system& sys,
                                                      const caf::actor& supervisor, int listener,
                                                      std::string job_ca_pem) {
  auto state = std::make_unique<State>(sys, supervisor, std::move(job_ca_pem));
  state->listener = listener;
  state->wake = ::eventfd(0, EFD_CLOEXEC);
  if (state->wake < 0) {
    ::close(listener);
    return make_error("the local door: eventfd failed");
  }
  auto* raw = state.get();
  state->acceptor = std::thread([raw] { raw->accept_loop(); });
  return std::unique_ptr<LocalDoor>(new LocalDoor(std::move(state)));
}

LocalDoor::~LocalDoor() {
  auto& s = *state_;
  std::uint64_t one = 1;
  if (::write(s.wake, &one, sizeof one) < 0) {
    // The eventfd cannot be full: nothing to do.
  }
  s.acceptor.join();
  ::close(s.listener);
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto& c : s.connections) {
    ::shutdown(c->fd, SHUT_RDWR);  // a thread reading returns
    std::lock_guard<std::mutex> inner(c->mutex);
    c->closing = true;
    if (c->waiting) {
      // A thread waiting for the supervisor's answer gets an error as that answer.
      auto* target = caf::actor_cast<caf::abstract_actor*>(c->waiting);
      target->enqueue(caf::make_mailbox_element(nullptr, c->mid, {},
                                                caf::make_error(caf::sec::request_receiver_down)),
                      nullptr);
    }
  }
  for (auto& c : s.connections) {
    c->thread.join();
    ::close(c->fd);
  }
  s.connections.clear();
  ::close(s.wake);
}

}  // namespace atl
