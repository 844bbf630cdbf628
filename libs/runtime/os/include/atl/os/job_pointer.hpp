// Where a shell in a job's pod finds the job: the node agent (and the head)
// publish the supervisor's address and the job's credentials directory in a
// small JSON file at a well-known place, so `atlctl status` works from any
// shell of any pod with no flags (seed 000: "open a web terminal on any
// worker and use atlctl").
//
// The place: $ATL_JOB_FILE when set (tests, unusual images), else the first
// writable of /run/atl/job.json, $XDG_RUNTIME_DIR/atl/job.json and
// /tmp/atl-<uid>/job.json; readers look in the same order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::os {

struct JobPointer {
  std::string job_id;
  std::string pod;      // who wrote it
  std::string address;  // the supervisor's HOST:PORT
  std::string tls_dir;  // the job's credentials; empty when insecure
  bool insecure = false;
};

std::string to_json(const JobPointer& p);
// Every field checked; unknown fields are ignored (newer writers).
Expected<JobPointer> parse_job_pointer(std::string_view json_text);

// The candidate paths, in order (see above).
std::vector<std::string> job_pointer_paths();

// `dir` made absolute (realpath when it exists): the pointer is read from other cwds.
std::string absolute_dir(const std::string& dir);

// Writes `p` (atomically: a temporary file renamed) to the first candidate
// it can; the path written, or why none could be.
Expected<std::string> publish_job_pointer(const JobPointer& p);

// Removes `path` if it still names `job_id` and `pod` (another job's pointer stays).
void withdraw_job_pointer(const std::string& path, const std::string& job_id,
                          const std::string& pod);

// The first candidate that exists: its pointer, or why it is unusable (a
// damaged file is an error, not a silent fallback). Nothing: none exists.
std::optional<Expected<JobPointer>> find_job_pointer(std::string* path_out = nullptr);

}  // namespace atl::os
