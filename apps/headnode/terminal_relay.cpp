#include "terminal_relay.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <caf/all.hpp>
#include <future>
#include <mutex>

#include "atl/actors/exit_words.hpp"
#include "atl/actors/messages.hpp"
#include "atl/actors/terminal_host.hpp"
#include "atl/core/reply_code.hpp"

namespace atl::headnode {

namespace {
// The supervisor's grant, then the pod's shell: together within open()'s wait.
constexpr auto kOpenTimeout = std::chrono::seconds(10);
constexpr auto kShellTimeout = std::chrono::seconds(10);
}  // namespace

// What the relay actor and the HTTP thread share.
struct TerminalLink::Impl {
  caf::actor relay;
  std::int64_t id = 0;
  int wake = -1;  // eventfd
  std::mutex mutex;
  std::string output;
  std::optional<std::string> ended;
  bool shell_ended = false;
  bool closed = false;
  std::int64_t input_unacked = 0;  // keystrokes on their way to the pod's terminal

  ~Impl() {
    if (wake >= 0) ::close(wake);
  }
  void signal() {
    std::uint64_t one = 1;
    (void)!::write(wake, &one, sizeof one);
  }
  void push(std::string bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    output += bytes;
    signal();
  }
  void input_taken(std::int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    input_unacked = std::max<std::int64_t>(0, input_unacked - bytes);
    signal();  // the HTTP thread may read the viewer's input again
  }
  void end(std::string why, bool by_the_shell) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!ended) {
      ended = std::move(why);
      shell_ended = by_the_shell;
    }
    signal();
  }
};

// open()'s answer: opened, or why not.
using OpenAnswer = std::shared_ptr<std::promise<std::variant<bool, TerminalRefusal>>>;

}  // namespace atl::headnode

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(atl::headnode::OpenAnswer)

namespace atl::headnode {

namespace {

// The relay's own messages, from the HTTP thread.
using relay_open_atom = caf::atom_constant<caf::atom("rl_open")>;

struct RelayState {
  std::shared_ptr<TerminalLink::Impl> link;
  caf::actor supervisor;
  caf::actor host;  // the pod's terminal host, once open
  std::int64_t id = 0;
  bool told = false;  // the supervisor knows it ended
};
using RelayActor = caf::stateful_actor<RelayState>;

caf::behavior relay(RelayActor* self, std::shared_ptr<TerminalLink::Impl> link,
                    caf::actor supervisor) {
  self->state.link = std::move(link);
  self->state.supervisor = std::move(supervisor);
  // Ends the terminal once: the pod (unless it is the one that ended it) and
  // the timeline are told, the browser learns why.
  auto finish = [self](const std::string& why, bool tell_host, bool by_the_shell = false) {
    auto& st = self->state;
    if (st.told) return;
    st.told = true;
    if (tell_host && st.host) self->send(st.host, term_close_atom::value, st.id);
    if (st.id) self->send(st.supervisor, term_close_atom::value, st.id, why);
    st.link->end(why, by_the_shell);
    self->quit();
  };
  self->set_down_handler([self, finish](const caf::down_msg& down) {
    if (down.source == self->state.host.address())
      finish("the connection to the pod dropped", false);
    else if (down.source == self->state.supervisor.address())
      finish("the head's supervisor ended", true);
  });
  return {
      [self](relay_open_atom, std::string& pod, std::string& who, std::int32_t rows,
             std::int32_t cols, OpenAnswer& answer) {
        // Refused, or not opened: the browser hears why, the relay ends.
        auto refuse = [self, answer](int status, std::string line) {
          answer->set_value(TerminalRefusal{status, std::move(line)});
          self->state.told = true;
          self->quit();
        };
        self->monitor(self->state.supervisor);
        self->request(self->state.supervisor, kOpenTimeout, term_open_atom::value, pod, who)
            .then(
                [self, answer, refuse, pod, rows, cols](std::int32_t code, std::string& line,
                                                        std::int64_t id, caf::actor& agent) {
                  if (code != wire(ReplyCode::ok))
                    return refuse(code == wire(ReplyCode::refused) ? 409 : 503, line);
                  // Granted: the terminal is the supervisor's to close from now on,
                  // or to forget if its shell does not start.
                  self->state.id = id;
                  self->state.link->id = id;
                  auto not_started = [self, refuse, id](std::string line) {
                    self->send(self->state.supervisor, term_started_atom::value, id, false);
                    self->state.id = 0;  // never opened: nothing for the timeline to close
                    refuse(503, std::move(line));
                  };
                  if (!agent) return not_started("pod " + pod + " has no agent");
                  self->request(agent, kShellTimeout, term_open_atom::value, id, rows, cols,
                                caf::actor_cast<caf::actor>(self))
                      .then(
                          [self, answer, not_started, pod, id](std::int32_t code, std::string& line,
                                                               caf::actor& host) {
                            if (code != 0 || !host)
                              return not_started("pod " + pod +
                                                 " could not start a shell: " + line);
                            auto& st = self->state;
                            self->send(st.supervisor, term_started_atom::value, id, true);
                            st.host = host;
                            self->monitor(host);
                            answer->set_value(true);
                          },
                          [self, not_started, pod](caf::error& err) {
                            not_started("pod " + pod + " did not start a shell: " +
                                        error_words(err, self->system()));
                          });
                },
                [self, refuse](caf::error& err) {
                  refuse(503,
                         "the supervisor did not open it: " + error_words(err, self->system()));
                });
      },
      [self](term_out_atom, std::int64_t id, std::string& bytes) {
        if (id == self->state.id) self->state.link->push(std::move(bytes));
      },
      [self](term_inack_atom, std::int64_t id, std::int64_t bytes) {
        if (id == self->state.id) self->state.link->input_taken(bytes);
      },
      [self, finish](term_ended_atom, std::int64_t id, const std::string& why) {
        if (id == self->state.id) finish(why, false, true);
      },
      // From the HTTP thread.
      [self](term_in_atom, std::string& bytes) {
        if (self->state.host)
          self->send(self->state.host, term_in_atom::value, self->state.id, std::move(bytes));
      },
      [self](term_size_atom, std::int32_t rows, std::int32_t cols) {
        if (self->state.host)
          self->send(self->state.host, term_size_atom::value, self->state.id, rows, cols);
      },
      [self](term_ack_atom, std::int64_t bytes) {
        if (self->state.host)
          self->send(self->state.host, term_ack_atom::value, self->state.id, bytes);
      },
      [self, finish](term_close_atom, const std::string& why) { finish(why, true); },
  };
}

}  // namespace

TerminalLink::~TerminalLink() { close("the viewer left"); }

std::int64_t TerminalLink::id() const { return impl_->id; }
int TerminalLink::wake_fd() const { return impl_->wake; }

TerminalLink::Taken TerminalLink::take() {
  std::uint64_t count = 0;
  (void)!::read(impl_->wake, &count, sizeof count);  // non-blocking: resets the eventfd
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Taken t;
  t.output.swap(impl_->output);
  t.ended = impl_->ended;
  t.shell_ended = impl_->shell_ended;
  return t;
}

void TerminalLink::input(std::string bytes) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->input_unacked += static_cast<std::int64_t>(bytes.size());
  }
  caf::anon_send(impl_->relay, term_in_atom::value, std::move(bytes));
}
bool TerminalLink::input_full() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->input_unacked >= kTerminalWindow;
}
void TerminalLink::resize(int rows, int cols) {
  caf::anon_send(impl_->relay, term_size_atom::value, static_cast<std::int32_t>(rows),
                 static_cast<std::int32_t>(cols));
}
void TerminalLink::ack(std::int64_t bytes) {
  caf::anon_send(impl_->relay, term_ack_atom::value, bytes);
}
void TerminalLink::close(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->closed) return;
    impl_->closed = true;
  }
  caf::anon_send(impl_->relay, term_close_atom::value, why);
}

TerminalRelays::TerminalRelays(caf::actor_system& sys, const caf::actor& supervisor)
    : sys_(sys), supervisor_(std::make_shared<caf::actor>(supervisor)) {}

std::variant<std::unique_ptr<TerminalLink>, TerminalRefusal> TerminalRelays::open(
    const std::string& pod, const std::string& who, int rows, int cols,
    const std::function<bool()>& stopping) {
  auto impl = std::make_shared<TerminalLink::Impl>();
  impl->wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->wake < 0) return TerminalRefusal{503, "cannot make an eventfd"};
  impl->relay = sys_.spawn(relay, impl, *supervisor_);
  auto answer = std::make_shared<std::promise<std::variant<bool, TerminalRefusal>>>();
  static_assert(std::is_same_v<decltype(answer), OpenAnswer>);
  auto got = answer->get_future();
  caf::anon_send(impl->relay, relay_open_atom::value, pod, who, static_cast<std::int32_t>(rows),
                 static_cast<std::int32_t>(cols), answer);
  // In slices: a head that stops meanwhile must not wait here for the pod
  // (its shutdown waits for this HTTP thread; CI saw it take 15 s).
  const auto deadline =
      std::chrono::steady_clock::now() + kOpenTimeout + kShellTimeout + std::chrono::seconds(2);
  while (got.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    const bool stop = stopping();
    if (stop || std::chrono::steady_clock::now() >= deadline) {
      caf::anon_send_exit(impl->relay, caf::exit_reason::user_shutdown);
      return TerminalRefusal{
          503, stop ? "the head is stopping" : "the head's actors did not answer in time"};
    }
  }
  auto result = got.get();
  if (auto* refusal = std::get_if<TerminalRefusal>(&result)) return *refusal;
  return std::make_unique<TerminalLink>(impl);
}

}  // namespace atl::headnode
