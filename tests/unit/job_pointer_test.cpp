#include "atl/os/job_pointer.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

class JobPointerFile : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/atl-pointer-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/sub/dir/job.json";  // the directories are made
    setenv("ATL_JOB_FILE", path_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("ATL_JOB_FILE");
    std::string rm = "rm -rf " + dir_;
    EXPECT_EQ(std::system(rm.c_str()), 0);
  }
  std::string dir_, path_;
};

atl::os::JobPointer sample() {
  return {"jo-x", "jo-x-worker-0", "10.0.0.1:6380", "/etc/atl", false};
}

}  // namespace

TEST(JobPointer, RoundTripsThroughItsJson) {
  auto back = atl::os::parse_job_pointer(atl::os::to_json(sample()));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->job_id, "jo-x");
  EXPECT_EQ(back->pod, "jo-x-worker-0");
  EXPECT_EQ(back->address, "10.0.0.1:6380");
  EXPECT_EQ(back->tls_dir, "/etc/atl");
  EXPECT_FALSE(back->insecure);
  // Insecure: no credentials needed; unknown fields (a newer writer's) are ignored.
  auto insecure = atl::os::parse_job_pointer(R"({"address": "h:1", "insecure": true, "new": 1})");
  ASSERT_TRUE(insecure.ok()) << insecure.error();
  EXPECT_TRUE(insecure->insecure);
}

TEST(JobPointer, BadFilesAreErrorsNamingTheField) {
  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& bad :
       {Bad{"", "not a JSON object"}, Bad{"[1]", "not a JSON object"},
        Bad{"{", "not a JSON object"}, Bad{R"({"tls_dir": "/t"})", "'address' is missing"},
        Bad{R"({"address": ""})", "'address' is missing or empty"},
        Bad{R"({"address": 5, "tls_dir": "/t"})", "'address' is not text"},
        Bad{R"({"address": "h:1"})", "'tls_dir' is missing"},
        Bad{R"({"address": "h:1", "insecure": "yes"})", "'insecure'"},
        Bad{R"({"address": "h:1", "tls_dir": ["/t"]})", "'tls_dir' is not text"}}) {
    auto p = atl::os::parse_job_pointer(bad.text);
    ASSERT_FALSE(p.ok()) << bad.text;
    EXPECT_NE(p.error().find(bad.says), std::string::npos) << bad.text << " -> " << p.error();
  }
}

TEST(JobPointer, ThePlacesAreRunThenTheRuntimeDirThenTmp) {
  unsetenv("ATL_JOB_FILE");
  setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
  auto paths = atl::os::job_pointer_paths();
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0], "/run/atl/job.json");
  EXPECT_EQ(paths[1], "/run/user/7/atl/job.json");
  EXPECT_EQ(paths[2], "/tmp/atl-" + std::to_string(getuid()) + "/job.json");
  unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(atl::os::job_pointer_paths().size(), 2u);
  setenv("ATL_JOB_FILE", "/x/job.json", 1);
  EXPECT_EQ(atl::os::job_pointer_paths(), std::vector<std::string>{"/x/job.json"});
  unsetenv("ATL_JOB_FILE");
}

TEST_F(JobPointerFile, PublishedIsFoundAndWithdrawnOnlyByItsWriter) {
  EXPECT_FALSE(atl::os::find_job_pointer().has_value());  // none yet
  auto written = atl::os::publish_job_pointer(sample());
  ASSERT_TRUE(written.ok()) << written.error();
  EXPECT_EQ(*written, path_);
  std::string found_at;
  auto found = atl::os::find_job_pointer(&found_at);
  ASSERT_TRUE(found.has_value());
  ASSERT_TRUE(found->ok()) << found->error();
  EXPECT_EQ((*found)->address, "10.0.0.1:6380");
  EXPECT_EQ(found_at, path_);
  // Another pod (or job) does not take it away; its writer does.
  atl::os::withdraw_job_pointer(path_, "jo-x", "jo-x-worker-1");
  atl::os::withdraw_job_pointer(path_, "jo-y", "jo-x-worker-0");
  EXPECT_EQ(access(path_.c_str(), F_OK), 0);
  atl::os::withdraw_job_pointer(path_, "jo-x", "jo-x-worker-0");
  EXPECT_NE(access(path_.c_str(), F_OK), 0);
}

TEST_F(JobPointerFile, ADamagedFileIsAnErrorNamingIt) {
  ASSERT_TRUE(atl::os::publish_job_pointer(sample()).ok());
  std::ofstream(path_) << "{\"address\": 1";
  auto found = atl::os::find_job_pointer();
  ASSERT_TRUE(found.has_value());
  ASSERT_FALSE(found->ok());
  EXPECT_NE(found->error().find(path_), std::string::npos) << found->error();
}

TEST_F(JobPointerFile, AnUnwritablePlaceIsAnError) {
  setenv("ATL_JOB_FILE", "/proc/atl-cannot/job.json", 1);
  auto written = atl::os::publish_job_pointer(sample());
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().find("cannot publish the job's address"), std::string::npos)
      << written.error();
}

TEST(JobPointer, AbsoluteDirResolvesRelativePaths) {
  EXPECT_EQ(atl::os::absolute_dir("/"), "/");
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  EXPECT_EQ(atl::os::absolute_dir("no-such-dir-here"), std::string(cwd) + "/no-such-dir-here");
}
