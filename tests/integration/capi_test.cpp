// The C API against a live local cluster: C programs (tests/capi/) run as the
// driver of a driver-mode job, with ATL_ADDRESS and ATL_TLS_DIR from atl.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "test_cluster.hpp"

namespace atl::test {
namespace {

// A driver-mode head whose driver is `argv`, and `workers` workers offering
// one "slot" each (a custom resource: contention without GPUs).
Started& start_driver_job(TestCluster& c, int workers, const std::vector<std::string>& argv) {
  std::vector<std::string> args = {"--mode", "driver", "--workers", std::to_string(workers), "--"};
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  args.push_back(command);
  auto& head = c.start_head(args);
  for (int w = 0; w < workers; ++w) c.start_worker(w, {"--resources", "{\"slot\": 1}"});
  return head;
}

TEST(CApi, PlacementGroupsArePlacedRefusedAndFreedAsRayWould) {
  TestCluster c;
  auto& head = start_driver_job(c, 2, {bin("atl_capi_placement"), "basics"});
  EXPECT_EQ(c.wait_exit(head, 120s), 0) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(CApi, TasksRunInBundlesStreamTheirOutputAndDieWithTheirGroup) {
  TestCluster c;
  auto& head = start_driver_job(c, 2, {bin("atl_capi_tasks")});
  EXPECT_EQ(c.wait_exit(head, 120s), 0) << c.output(head);
  // Task output is echoed on the head as Ray's log_to_driver does.
  EXPECT_NE(c.output(head).find("[task 3] bar baz 1234 /tmp"), std::string::npos) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(CApi, NamedActorsAreCalledByNameAcrossProcessesAndTheirHostsDeathIsAnError) {
  TestCluster c;
  auto& head = start_driver_job(c, 2, {bin("atl_capi_actors"), "driver"});
  EXPECT_EQ(c.wait_exit(head, 180s), 0) << c.output(head);
  EXPECT_NE(c.output(head).find("[driver] actors: all checks passed"), std::string::npos)
      << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(CApi, TheCExampleDriverRuns) {
  TestCluster c;
  auto& head = start_driver_job(c, 2, {bin("atl-example-driver")});
  EXPECT_EQ(c.wait_exit(head, 120s), 0) << c.output(head);
  std::string out = c.output(head);
  EXPECT_NE(out.find("[driver] 2 workers"), std::string::npos) << out;
  EXPECT_NE(out.find("[driver] bundle 1: exit 0: task on " + c.worker_name(1)), std::string::npos)
      << out;
  EXPECT_NE(out.find("[driver] greeter says: hello, world"), std::string::npos) << out;
  EXPECT_TRUE(c.no_strays_within());
}

TEST(CApi, ALostNodesBundleIsPlacedAgainAndTheDriverGoesOn) {
  TestCluster c;
  const std::string marker = c.dir() + "/placed";
  auto& head = start_driver_job(c, 3, {bin("atl_capi_placement"), "loss", marker});
  for (int i = 0; i < 600 && ::access(marker.c_str(), F_OK) != 0; ++i)
    std::this_thread::sleep_for(100ms);
  ASSERT_EQ(::access(marker.c_str(), F_OK), 0) << c.output(head);
  ASSERT_GT(c.worker_pid(1), 0);
  ::kill(c.worker_pid(1), SIGKILL);
  EXPECT_EQ(c.wait_exit(head, 120s), 0) << c.output(head);
  std::string out = c.output(head);
  EXPECT_NE(out.find("the driver goes on"), std::string::npos) << out;
  EXPECT_EQ(out.find("job restarted"), std::string::npos) << out;
  EXPECT_TRUE(c.no_strays_within());
}

}  // namespace
}  // namespace atl::test
