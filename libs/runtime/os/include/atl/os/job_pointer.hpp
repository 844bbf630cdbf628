// Where a shell in a job's pod finds the job: the node agent (and the head)
// publish the supervisor's address and the job's credentials directory in a
// small JSON file at a well-known place, so `atlctl status` works from any
// shell of any pod with no flags (seed 000: "open a web terminal on any
// worker and use atlctl").
//
// The place: $ATL_JOB_FILE when set (tests, unusual images), else the first
// writable of /run/atl/job.json, $XDG_RUNTIME_DIR/atl/job.json and
// /tmp/atl-<uid>/job.json; readers look in the same order. Each job has a
// file of its own beside it, jobs/<job-id>.json (several jobs can share a
// host: their pods never overwrite each other's); job.json itself is the
// first job's, for hosts that run one. Files are 0600 (the writer's umask).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::os {

struct JobPointer {
  std::string job_id;
  std::string pod;      // who wrote it
  std::string address;  // the supervisor's HOST:PORT
  std::string tls_dir;  // the job's credentials; empty when insecure
  bool insecure = false;
  // Who wrote it, to tell a live job from one whose head or pod was killed
  // and left its file: the writer's pid, its start time (clock ticks since
  // boot, /proc/PID/stat) and its PID namespace ("pid:[4026531836]"): a
  // reader in another namespace cannot tell, and takes the file as live.
  // Filled by publish_job_pointer; 0/empty: an older writer, taken as live.
  std::int64_t writer_pid = 0;
  std::int64_t writer_start = 0;
  std::string writer_pidns;
};

// Whether the process that wrote `p` still runs (see JobPointer).
bool writer_alive(const JobPointer& p);

std::string to_json(const JobPointer& p);
// Every field checked; unknown fields are ignored (newer writers).
Expected<JobPointer> parse_job_pointer(std::string_view json_text);

// The candidate paths, in order (see above).
std::vector<std::string> job_pointer_paths();

// `dir` made absolute (realpath when it exists): the pointer is read from other cwds.
std::string absolute_dir(const std::string& dir);

// The job's own file beside the pointer `pointer_path`.
std::string job_file_beside(const std::string& pointer_path, const std::string& job_id);

// Writes `p` (atomically: a temporary file renamed) as its job's file in the
// first place it can, and as job.json there unless that names another job;
// the job's file written, or why none could be.
Expected<std::string> publish_job_pointer(const JobPointer& p);

// Removes `path` and the job.json of every place where they still name
// `job_id` and `pod` (another job's or pod's pointer stays).
void withdraw_job_pointer(const std::string& path, const std::string& job_id,
                          const std::string& pod);

// A pointer this process published, withdrawn when this object ends or at
// withdraw(), whichever comes first (a process that ends with _exit calls it).
class PublishedJobPointer {
 public:
  PublishedJobPointer() = default;
  PublishedJobPointer(std::string path, std::string job_id, std::string pod)
      : path_(std::move(path)), job_id_(std::move(job_id)), pod_(std::move(pod)) {}
  PublishedJobPointer(const PublishedJobPointer&) = delete;
  PublishedJobPointer& operator=(const PublishedJobPointer&) = delete;
  PublishedJobPointer& operator=(PublishedJobPointer&& other) noexcept {
    withdraw();
    path_ = std::move(other.path_);
    job_id_ = std::move(other.job_id_);
    pod_ = std::move(other.pod_);
    other.path_.clear();
    return *this;
  }
  ~PublishedJobPointer() { withdraw(); }

  bool published() const { return !path_.empty(); }
  void withdraw() {
    if (!path_.empty()) withdraw_job_pointer(path_, job_id_, pod_);
    path_.clear();
  }

 private:
  std::string path_, job_id_, pod_;
};

// Which job a reader wants: by id ($ATL_JOB_ID), by the supervisor's address
// (--address), or, with neither, the one job of the host.
struct JobPointerQuery {
  std::string job_id;
  std::string address;
};

// The first place with a match: its pointer, or why it is unusable (a
// damaged file is an error, not a silent fallback; so are several jobs when
// the query names none: atl never guesses between them). Files whose writer
// is gone are not live jobs: never listed among them nor used; a job asked
// for by id whose file is such says it ended, one with no file that there is
// no such job here. Nothing: no match.
std::optional<Expected<JobPointer>> find_job_pointer(const JobPointerQuery& query = {},
                                                     std::string* path_out = nullptr);

}  // namespace atl::os
