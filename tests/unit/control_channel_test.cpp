// The control channel between an Executor and its process: real socket pairs
// and real child processes.
#include "atl/os/control_channel.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "atl/os/child_process.hpp"

using namespace atl::os;
using namespace std::chrono_literals;

TEST(ControlChannel, LinesArriveWholeWhateverTheChunks) {
  auto pair = make_control_pair();
  ASSERT_TRUE(pair.ok()) << pair.error();
  ASSERT_TRUE(write_line(pair->child, "first").ok());
  ASSERT_EQ(::write(pair->child, "sec", 3), 3);  // a line in two pieces
  ASSERT_EQ(::write(pair->child, "ond\nthird\n", 10), 10);
  LineReader reader(pair->parent);
  std::string line;
  ASSERT_EQ(reader.read(line, 5s), LineReader::Result::line);
  EXPECT_EQ(line, "first");
  ASSERT_EQ(reader.read(line, 5s), LineReader::Result::line);
  EXPECT_EQ(line, "second");
  ASSERT_EQ(reader.read(line, 5s), LineReader::Result::line);
  EXPECT_EQ(line, "third");
  EXPECT_EQ(reader.read(line, 50ms), LineReader::Result::timeout);
  ::close(pair->child);
  EXPECT_EQ(reader.read(line, 5s), LineReader::Result::closed);
  ::close(pair->parent);
}

TEST(ControlChannel, ALineMayNotHoldANewline) {
  auto pair = make_control_pair();
  ASSERT_TRUE(pair.ok());
  EXPECT_FALSE(write_line(pair->child, "two\nlines").ok());
  ::close(pair->child);
  ::close(pair->parent);
}

TEST(ControlChannel, TheChildFindsItsEndAtFd3AndAnswersComeBack) {
  auto pair = make_control_pair();
  ASSERT_TRUE(pair.ok());
  SpawnRequest req;
  // Asks on fd 3, then echoes the answer to stdout.
  req.argv = {"/bin/sh", "-c",
              "echo \"hello $ATL_CONTROL_FD\" >&3; read answer <&3; echo \"got $answer\""};
  req.env = {"PATH=/usr/bin:/bin", "ATL_CONTROL_FD=3"};
  req.control_fd = pair->child;
  auto child = ChildProcess::spawn(req);
  ::close(pair->child);
  ASSERT_TRUE(child.ok()) << child.error();
  LineReader reader(pair->parent);
  std::string line;
  ASSERT_EQ(reader.read(line, 30s), LineReader::Result::line);
  EXPECT_EQ(line, "hello 3");
  ASSERT_TRUE(write_line(pair->parent, "go").ok());
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(child->output_fd(), buf, sizeof buf)) > 0;) out.append(buf, n);
  EXPECT_EQ(out, "got go\n");
  EXPECT_TRUE(child->wait().success());
  // The child and its guard are gone: the channel closes.
  EXPECT_EQ(reader.read(line, 30s), LineReader::Result::closed);
  ::close(pair->parent);
}

TEST(ControlChannel, WithoutOneFd3IsClosedInTheChild) {
  SpawnRequest req;
  req.argv = {"/bin/sh", "-c", "{ echo x >&3; } 2>/dev/null && echo open || echo closed"};
  req.env = {"PATH=/usr/bin:/bin"};
  auto child = ChildProcess::spawn(req);
  ASSERT_TRUE(child.ok()) << child.error();
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(child->output_fd(), buf, sizeof buf)) > 0;) out.append(buf, n);
  EXPECT_EQ(out, "closed\n");
  child->wait();
}

TEST(ControlChannel, TheVariableNamesTheDescriptor) {
  ::setenv(kControlFdVariable, "3", 1);
  EXPECT_EQ(control_fd_from_environment(), 3);
  ::setenv(kControlFdVariable, "three", 1);
  EXPECT_FALSE(control_fd_from_environment());
  ::setenv(kControlFdVariable, "-1", 1);
  EXPECT_FALSE(control_fd_from_environment());
  ::unsetenv(kControlFdVariable);
  EXPECT_FALSE(control_fd_from_environment());
}
