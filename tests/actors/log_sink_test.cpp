// The head's LogSink with a real actor system and its writer thread: more
// streams than it keeps files open (256) each keep every line, in order, in
// their own file (files closed to make room are opened again and appended).
#define CAF_SUITE log_sink
#include "atl/actors/log_sink.hpp"

#include <caf/all.hpp>
#include <caf/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

}  // namespace

CAF_TEST(streams beyond the open files keep every line in order) {
  char tmpl[] = "/tmp/atl-sink-XXXXXX";
  CAF_REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  {
    caf::actor_system_config cfg;
    atl::add_atl_message_types(cfg);
    caf::actor_system sys{cfg};
    auto sink = atl::spawn_log_sink(sys, dir, false);
    caf::scoped_actor self{sys};
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
    self->send_exit(sink, caf::exit_reason::user_shutdown);
  }
  std::filesystem::remove_all(dir);
}
