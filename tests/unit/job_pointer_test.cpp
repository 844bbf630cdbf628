#include "atl/os/job_pointer.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
  return {"jo-x", "jo-x-worker-0", "10.0.0.1:6380", "/etc/atl", false, 0, 0, {}};
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
  const std::string own = dir_ + "/sub/dir/jobs/jo-x.json";
  EXPECT_EQ(*written, own);
  EXPECT_EQ(access(path_.c_str(), F_OK), 0) << "job.json for a host with one job";
  std::string found_at;
  auto found = atl::os::find_job_pointer({}, &found_at);
  ASSERT_TRUE(found.has_value());
  ASSERT_TRUE(found->ok()) << found->error();
  EXPECT_EQ((*found)->address, "10.0.0.1:6380");
  EXPECT_EQ(found_at, own);
  // Private: the pointer names where the job's key is.
  struct stat st {};
  ASSERT_EQ(stat(own.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
  // Another pod (or job) does not take it away; its writer does.
  atl::os::withdraw_job_pointer(*written, "jo-x", "jo-x-worker-1");
  atl::os::withdraw_job_pointer(*written, "jo-y", "jo-x-worker-0");
  EXPECT_EQ(access(own.c_str(), F_OK), 0);
  atl::os::withdraw_job_pointer(*written, "jo-x", "jo-x-worker-0");
  EXPECT_NE(access(own.c_str(), F_OK), 0);
  EXPECT_NE(access(path_.c_str(), F_OK), 0);
}

// A local cluster: the head publishes, then its workers (same job, same
// supervisor) on the same host; a worker that ends must not take away the
// pointer of the head, which lingers (the demo's dashboard-url). A restarted
// head (another address) replaces it.
TEST_F(JobPointerFile, PodsOfOneJobOnAHostKeepTheFirstWritersPointer) {
  atl::os::JobPointer head{"jo-x", "jo-x-head", "10.0.0.1:6380", "/etc/atl", false, 0, 0, {}};
  atl::os::JobPointer worker = sample();
  auto by_head = atl::os::publish_job_pointer(head);
  auto by_worker = atl::os::publish_job_pointer(worker);
  ASSERT_TRUE(by_head.ok() && by_worker.ok());
  EXPECT_EQ(*by_head, *by_worker);
  atl::os::withdraw_job_pointer(*by_worker, "jo-x", "jo-x-worker-0");
  auto found = atl::os::find_job_pointer();
  ASSERT_TRUE(found && found->ok());
  EXPECT_EQ((*found)->pod, "jo-x-head");
  head.address = "10.0.0.9:7000";
  head.pod = "jo-x-head";
  ASSERT_TRUE(atl::os::publish_job_pointer(head).ok());
  found = atl::os::find_job_pointer();
  ASSERT_TRUE(found && found->ok());
  EXPECT_EQ((*found)->address, "10.0.0.9:7000");
}

// Two jobs on one host: each keeps its own file, job.json stays the first's,
// and a reader that names neither is told to choose instead of given a guess.
TEST_F(JobPointerFile, TwoJobsOnAHostNeverTakeEachOthersFile) {
  atl::os::JobPointer a = sample();
  atl::os::JobPointer b{"jo-y", "jo-y-worker-0", "10.0.0.2:6380", "/etc/atl-y", false, 0, 0, {}};
  ASSERT_TRUE(atl::os::publish_job_pointer(a).ok());
  auto written_b = atl::os::publish_job_pointer(b);
  ASSERT_TRUE(written_b.ok());
  auto shared = atl::os::find_job_pointer({"jo-x", ""});
  ASSERT_TRUE(shared && shared->ok());
  EXPECT_EQ((*shared)->tls_dir, "/etc/atl");
  auto by_id = atl::os::find_job_pointer({"jo-y", ""});
  ASSERT_TRUE(by_id && by_id->ok());
  EXPECT_EQ((*by_id)->tls_dir, "/etc/atl-y");
  // --address of job y takes job y's credentials, whatever job.json says.
  auto by_address = atl::os::find_job_pointer({"", "10.0.0.2:6380"});
  ASSERT_TRUE(by_address && by_address->ok());
  EXPECT_EQ((*by_address)->tls_dir, "/etc/atl-y");
  EXPECT_FALSE(atl::os::find_job_pointer({"", "10.9.9.9:1"}).has_value());
  // A job named that has no file here: said so, not taken for another.
  auto none = atl::os::find_job_pointer({"jo-z", ""});
  ASSERT_TRUE(none.has_value());
  ASSERT_FALSE(none->ok());
  EXPECT_EQ(none->error(), "no job jo-z on this host (no " + dir_ +
                               "/sub/dir/jobs/jo-z.json): check ATL_JOB_ID, or pass --address "
                               "HOST:PORT");
  auto neither = atl::os::find_job_pointer();
  ASSERT_TRUE(neither.has_value());
  ASSERT_FALSE(neither->ok());
  EXPECT_NE(neither->error().find("2 jobs on this host (jo-x at 10.0.0.1:6380, jo-y at "
                                  "10.0.0.2:6380): pass --address HOST:PORT or set ATL_JOB_ID"),
            std::string::npos)
      << neither->error();
  // job.json is still the first job's; y leaving takes only its own file.
  std::ifstream pointer(path_);
  std::string text((std::istreambuf_iterator<char>(pointer)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("jo-x"), std::string::npos) << text;
  atl::os::withdraw_job_pointer(*written_b, "jo-y", "jo-y-worker-0");
  auto one = atl::os::find_job_pointer();
  ASSERT_TRUE(one && one->ok());
  EXPECT_EQ((*one)->job_id, "jo-x");
}

// A head or pod killed with SIGKILL leaves its file: its writer (pid and
// start time) is gone, so the file is no live job: never listed nor used, a
// reader asking for it by id is told the job ended, and the next writer of
// that job replaces it.
TEST_F(JobPointerFile, AFileWhoseWriterIsGoneIsAnEndedJob) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  atl::os::JobPointer dead = sample();
  dead.writer_pid = child;  // ended, and its start time would not match a reuse
  dead.writer_start = 1;
  dead.writer_pidns = atl::os::JobPointer{}.writer_pidns;
  // Written as its writer would have: through publish's file format.
  ASSERT_TRUE(atl::os::publish_job_pointer(sample()).ok());
  {
    std::ifstream in(dir_ + "/sub/dir/jobs/jo-x.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto mine = atl::os::parse_job_pointer(text);
    ASSERT_TRUE(mine.ok()) << mine.error();
    EXPECT_EQ(mine->writer_pid, getpid());
    EXPECT_TRUE(atl::os::writer_alive(*mine));
    dead.writer_pidns = mine->writer_pidns;
  }
  EXPECT_FALSE(atl::os::writer_alive(dead));
  std::ofstream(dir_ + "/sub/dir/jobs/jo-x.json") << atl::os::to_json(dead);
  std::ofstream(path_) << atl::os::to_json(dead);
  auto any = atl::os::find_job_pointer();
  ASSERT_TRUE(any.has_value());
  ASSERT_FALSE(any->ok());
  EXPECT_EQ(
      any->error(),
      "no running job on this host (ended: jo-x): pass --address HOST:PORT of a running head");
  auto asked = atl::os::find_job_pointer({"jo-x", ""});
  ASSERT_TRUE(asked.has_value());
  ASSERT_FALSE(asked->ok());
  EXPECT_EQ(asked->error(), "job jo-x has ended: jo-x-worker-0 (pid " + std::to_string(child) +
                                ") that published " + dir_ +
                                "/sub/dir/jobs/jo-x.json is gone; its logs and state stay in its "
                                "head's state dir");
  // Another job, alive: the only one there is, not one of two.
  atl::os::JobPointer b{"jo-y", "jo-y-worker-0", "10.0.0.2:6380", "/etc/atl-y", false, 0, 0, {}};
  ASSERT_TRUE(atl::os::publish_job_pointer(b).ok());
  auto live = atl::os::find_job_pointer();
  ASSERT_TRUE(live && live->ok()) << (live ? live->error() : "none");
  EXPECT_EQ((*live)->job_id, "jo-y");
  // The ended job's next writer (its head restarted) takes its file back.
  ASSERT_TRUE(atl::os::publish_job_pointer(sample()).ok());
  auto back = atl::os::find_job_pointer({"jo-x", ""});
  ASSERT_TRUE(back && back->ok()) << (back ? back->error() : "none");
  EXPECT_EQ((*back)->writer_pid, getpid());
}

TEST_F(JobPointerFile, ADamagedFileIsAnErrorNamingIt) {
  auto written = atl::os::publish_job_pointer(sample());
  ASSERT_TRUE(written.ok());
  std::ofstream(*written) << "{\"address\": 1";
  auto found = atl::os::find_job_pointer();
  ASSERT_TRUE(found.has_value());
  ASSERT_FALSE(found->ok());
  EXPECT_NE(found->error().find(*written), std::string::npos) << found->error();
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
