// The head's LogSink with a real actor system and its writer thread: more
// streams than it keeps files open (256) each keep every line, in order, in
// their own file (files closed to make room are opened again and appended).
#define CAF_SUITE log_sink
#include "atl/actors/log_sink.hpp"

#include <algorithm>
#include <caf/all.hpp>
#include <caf/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/messages.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A new temp dir, removed with everything in it.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/atl-sink-XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path = tmpl;
  }
  ~TempDir() {
    if (!path.empty()) std::filesystem::remove_all(path);
  }
};

// A LogSink in an actor system of its own, writing into a temp dir; ended
// (its writes done) before the dir goes.
struct SinkUnderTest {
  TempDir temp;
  const std::string& dir = temp.path;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor sink;
  std::unique_ptr<caf::scoped_actor> me;

  SinkUnderTest() {
    atl::add_atl_message_types(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
    sink = atl::spawn_log_sink(*sys, dir, false);
    me = std::make_unique<caf::scoped_actor>(*sys);
  }
  ~SinkUnderTest() {
    (*me)->send_exit(sink, caf::exit_reason::user_shutdown);
    me.reset();
    sink = nullptr;
    sys.reset();  // waits for the sink's end
  }
};

}  // namespace

CAF_TEST(streams beyond the open files keep every line in order) {
  SinkUnderTest t;
  CAF_REQUIRE(!t.dir.empty());
  const std::string& dir = t.dir;
  auto& sink = t.sink;
  auto& self = *t.me;
  {
    constexpr int kStreams = 600;  // > 256 open at once
    for (int round = 0; round < 3; ++round) {
      for (int rank = 0; rank < kStreams; ++rank)
        self->send(sink, atl::log_atom::value, atl::StreamId::of_rank(rank),
                   "rank " + std::to_string(rank) + " line " + std::to_string(round) + "\n",
                   std::int32_t{1});
      int acks = 0;
      for (int i = 0; i < kStreams; ++i)
        self->receive([&](atl::ack_atom) { ++acks; },
                      caf::after(std::chrono::seconds(30)) >> [] {});
      CAF_REQUIRE_EQUAL(acks, kStreams);
    }
    for (int rank = 0; rank < kStreams; ++rank) {
      const std::string want = "rank " + std::to_string(rank) + " line 0\nrank " +
                               std::to_string(rank) + " line 1\nrank " + std::to_string(rank) +
                               " line 2\n";
      CAF_CHECK_EQUAL(read_file(dir + "/attempt-1/rank-" + std::to_string(rank) + ".log"), want);
    }
    CAF_CHECK_EQUAL(read_file(dir + "/rank-599.log"),
                    "rank 599 line 0\nrank 599 line 1\nrank 599 line 2\n");
  }
}

namespace {

// Sends a chunk as an executor does (its attempt, where it begins in its
// process's output) and waits for its ack.
void send_chunk(caf::scoped_actor& self, const caf::actor& sink, const atl::StreamId& stream,
                std::int32_t attempt, std::int64_t offset, const std::string& text) {
  self->send(sink, atl::log_atom::value, stream, attempt, offset, text,
             static_cast<std::int32_t>(std::count(text.begin(), text.end(), '\n')));
  bool acked = false;
  self->receive([&](atl::ack_atom) { acked = true; },
                caf::after(std::chrono::seconds(30)) >> [] {});
  CAF_REQUIRE(acked);
}

// A kept chunk as the supervisor hands it on (no ack: request/response).
void send_kept(caf::scoped_actor& self, const caf::actor& sink, const atl::StreamId& stream,
               std::int32_t attempt, std::int64_t offset, const std::string& text) {
  atl::KeptOutput kept{
      atl::UnsentChunk{stream, attempt, offset, text,
                       static_cast<std::int32_t>(std::count(text.begin(), text.end(), '\n'))},
      "pod-0"};
  bool taken = false;
  self->request(sink, std::chrono::seconds(30), kept)
      .receive([&](bool) { taken = true; }, [](const caf::error&) {});
  CAF_REQUIRE(taken);
}

}  // namespace

// A network cut: the pod kept its unacknowledged chunks and sent them again
// as it rejoined; the old connection, healed, then delivered the same chunks
// (and one the file had half of). Each byte of the rank's output is in its
// file once, in order, and so are later chunks and an earlier attempt's
// late ones (NetworkNamespaces.AnEightSecondCutLosesNoLine once found 800
// lines twice).
CAF_TEST(a chunk that comes twice is written once) {
  SinkUnderTest t;
  CAF_REQUIRE(!t.dir.empty());
  const std::string& dir = t.dir;
  auto& sink = t.sink;
  auto& self = *t.me;
  {
    const auto rank = atl::StreamId::of_rank(1);
    send_chunk(self, sink, rank, 1, 0, "a\nb\n");
    send_kept(self, sink, rank, 1, 4, "c\nd\n");   // kept through the cut
    send_chunk(self, sink, rank, 1, 4, "c\nd\n");  // the healed connection's copy
    send_chunk(self, sink, rank, 1, 6, "d\ne\n");  // half of it written already
    send_chunk(self, sink, rank, 1, 10, "f\n");
    CAF_CHECK_EQUAL(read_file(dir + "/attempt-1/rank-1.log"), "a\nb\nc\nd\ne\nf\n");
    // The next attempt: a new process, its output from offset 0 in a file of
    // its own; the previous attempt's late copies are still written once.
    self->send(sink, atl::sink_order::NewAttempt{2});
    send_chunk(self, sink, rank, 2, 0, "g\n");
    send_chunk(self, sink, rank, 1, 10, "f\n");
    send_chunk(self, sink, rank, 1, 12, "h\n");
    send_chunk(self, sink, rank, 2, 0, "g\n");
    send_chunk(self, sink, rank, 2, 2, "i\n");
    CAF_CHECK_EQUAL(read_file(dir + "/attempt-1/rank-1.log"), "a\nb\nc\nd\ne\nf\nh\n");
    CAF_CHECK_EQUAL(read_file(dir + "/attempt-2/rank-1.log"), "g\ni\n");
  }
}
