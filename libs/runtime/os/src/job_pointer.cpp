#include "atl/os/job_pointer.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace atl::os {

namespace {

using json = nlohmann::json;

// mkdir -p for the pointer's directory (0755 less the writer's umask).
bool make_dirs(const std::string& dir) {
  if (dir.empty()) return false;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  auto slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(dir.substr(0, slash))) return false;
  return ::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
}

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

Expected<std::string> write_file(const std::string& path, const std::string& text) {
  if (!make_dirs(dir_of(path))) return make_error(dir_of(path) + ": " + std::strerror(errno));
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(tmp + ": " + std::strerror(errno));
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_error(tmp + ": " + why);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return make_error(path + ": " + why);
  }
  return path;
}

}  // namespace

std::string to_json(const JobPointer& p) {
  json j = {{"job_id", p.job_id},
            {"pod", p.pod},
            {"address", p.address},
            {"tls_dir", p.tls_dir},
            {"insecure", p.insecure}};
  if (p.writer_pid > 0)
    j["writer"] = {{"pid", p.writer_pid}, {"start", p.writer_start}, {"pidns", p.writer_pidns}};
  return j.dump(2) + "\n";
}

namespace {

// /proc/PID/stat's 22nd field (starttime), 0 when there is no such process.
std::int64_t start_time_of(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::strtoll(field.c_str(), nullptr, 10);
  return 0;
}

std::string own_pid_namespace() {
  char link[128];
  const ssize_t n = ::readlink("/proc/self/ns/pid", link, sizeof link - 1);
  return n > 0 ? std::string(link, static_cast<size_t>(n)) : std::string();
}

}  // namespace

bool writer_alive(const JobPointer& p) {
  if (p.writer_pid <= 0) return true;  // an older writer: nothing to tell by
  if (p.writer_pidns.empty() || p.writer_pidns != own_pid_namespace()) return true;
  return start_time_of(p.writer_pid) == p.writer_start;
}

Expected<JobPointer> parse_job_pointer(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return make_error("not a JSON object");
  JobPointer p;
  for (auto [field, out] : {std::pair{"job_id", &p.job_id},
                            {"pod", &p.pod},
                            {"address", &p.address},
                            {"tls_dir", &p.tls_dir}}) {
    if (!j.contains(field)) continue;
    if (!j[field].is_string()) return make_error(std::string("field '") + field + "' is not text");
    *out = j[field].get<std::string>();
  }
  if (j.contains("insecure")) {
    if (!j["insecure"].is_boolean()) return make_error("field 'insecure' is not true or false");
    p.insecure = j["insecure"].get<bool>();
  }
  if (j.contains("writer")) {
    const json& w = j["writer"];
    if (!w.is_object() || !w.value("pid", json()).is_number_integer() ||
        !w.value("start", json()).is_number_integer() || !w.value("pidns", json()).is_string())
      return make_error("field 'writer' is not {pid, start, pidns}");
    p.writer_pid = w["pid"].get<std::int64_t>();
    p.writer_start = w["start"].get<std::int64_t>();
    p.writer_pidns = w["pidns"].get<std::string>();
  }
  if (p.address.empty()) return make_error("field 'address' is missing or empty");
  if (p.tls_dir.empty() && !p.insecure)
    return make_error("field 'tls_dir' is missing or empty (and 'insecure' is not true)");
  return p;
}

std::string absolute_dir(const std::string& dir) {
  char resolved[PATH_MAX];
  if (::realpath(dir.c_str(), resolved)) return resolved;
  if (!dir.empty() && dir[0] == '/') return dir;
  char cwd[PATH_MAX];
  return ::getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + dir : dir;
}

std::vector<std::string> job_pointer_paths() {
  if (const char* file = std::getenv("ATL_JOB_FILE"); file && *file) return {file};
  std::vector<std::string> out = {"/run/atl/job.json"};
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime)
    out.push_back(std::string(runtime) + "/atl/job.json");
  out.push_back("/tmp/atl-" + std::to_string(::getuid()) + "/job.json");
  return out;
}

std::string job_file_beside(const std::string& pointer_path, const std::string& job_id) {
  return dir_of(pointer_path) + "/jobs/" + job_id + ".json";
}

namespace {

// A job id that can name a file: no separators, no dot files.
bool usable_id(const std::string& id) {
  return !id.empty() && id[0] != '.' && id.find('/') == std::string::npos;
}

std::optional<Expected<JobPointer>> read_pointer(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  auto p = parse_job_pointer(text.str());
  if (!p) return Expected<JobPointer>(make_error(path + ": " + p.error()));
  return Expected<JobPointer>(std::move(p).value());
}

// The jobs/ files of a place, sorted by name, with what each holds.
std::vector<std::pair<std::string, Expected<JobPointer>>> job_files(const std::string& pointer) {
  std::vector<std::pair<std::string, Expected<JobPointer>>> out;
  std::string dir = dir_of(pointer) + "/jobs";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 5 && name[0] != '.' && name.compare(name.size() - 5, 5, ".json") == 0)
      names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    auto p = read_pointer(dir + "/" + name);
    if (p) out.emplace_back(dir + "/" + name, std::move(*p));
  }
  return out;
}

}  // namespace

Expected<std::string> publish_job_pointer(const JobPointer& given) {
  JobPointer p = given;
  if (p.writer_pid == 0) {
    p.writer_pid = ::getpid();
    p.writer_start = start_time_of(p.writer_pid);
    p.writer_pidns = own_pid_namespace();
  }
  std::string text = to_json(p);
  std::string errors;
  // No id to name a file after (an older head): the shared pointer only.
  const bool own_file = usable_id(p.job_id);
  for (const auto& path : job_pointer_paths()) {
    const std::string target = own_file ? job_file_beside(path, p.job_id) : path;
    // Pods of one job sharing a host (a local cluster: the head, then its
    // workers) point at the same supervisor: the first writer keeps the
    // file, so a worker that ends does not take away the pointer of the head
    // that lingers. Another address (a head restarted elsewhere) replaces it.
    if (auto there = read_pointer(target);
        there && *there && (*there)->job_id == p.job_id && (*there)->address == p.address &&
        (*there)->insecure == p.insecure && writer_alive(**there))
      return target;
    auto written = write_file(target, text);
    if (!written) {
      errors += (errors.empty() ? "" : "; ") + written.error();
      continue;
    }
    // job.json for a host with one job: taken by the first, never overwritten
    // by another job (a damaged one is replaced).
    auto current = own_file ? read_pointer(path) : std::nullopt;
    if (own_file &&
        (!current || !*current || (*current)->job_id == p.job_id || !writer_alive(**current)))
      write_file(path, text);
    return written;
  }
  return make_error("cannot publish the job's address: " + errors);
}

void withdraw_job_pointer(const std::string& path, const std::string& job_id,
                          const std::string& pod) {
  std::vector<std::string> paths = {path};
  for (const auto& pointer : job_pointer_paths()) paths.push_back(pointer);
  for (const auto& candidate : paths) {
    auto p = read_pointer(candidate);
    if (p && *p && (*p)->job_id == job_id && (*p)->pod == pod) ::unlink(candidate.c_str());
  }
}

std::optional<Expected<JobPointer>> find_job_pointer(const JobPointerQuery& query,
                                                     std::string* path_out) {
  auto found = [&](const std::string& path, Expected<JobPointer> p) {
    if (path_out) *path_out = path;
    return std::optional<Expected<JobPointer>>(std::move(p));
  };
  auto gone = [](const JobPointer& p) { return !writer_alive(p); };
  // Files whose writer is gone: the job asked for, or every job seen.
  std::optional<std::pair<std::string, JobPointer>> asked_ended;
  std::vector<std::string> ended;
  for (const auto& pointer : job_pointer_paths()) {
    if (!query.job_id.empty()) {
      std::vector<std::string> candidates;
      if (usable_id(query.job_id)) candidates.push_back(job_file_beside(pointer, query.job_id));
      candidates.push_back(pointer);
      for (const auto& path : candidates) {
        auto p = read_pointer(path);
        if (!p) continue;
        if (*p && (*p)->job_id != query.job_id) continue;
        if (*p && gone(**p)) {
          if (!asked_ended) asked_ended = {path, **p};
          continue;
        }
        return found(path, std::move(*p));
      }
      continue;
    }
    std::vector<std::pair<std::string, Expected<JobPointer>>> jobs;
    for (auto& [path, p] : job_files(pointer)) {
      if (p && gone(*p))
        ended.push_back(p->job_id);
      else
        jobs.emplace_back(path, std::move(p));
    }
    auto shared = read_pointer(pointer);
    if (shared && *shared && gone(**shared)) {
      ended.push_back((*shared)->job_id);
      shared.reset();
    }
    if (!query.address.empty()) {
      for (auto& [path, p] : jobs)
        if (p && p->address == query.address) return found(path, std::move(p));
      if (shared && *shared && (*shared)->address == query.address)
        return found(pointer, std::move(*shared));
      continue;
    }
    if (jobs.size() == 1) return found(jobs[0].first, std::move(jobs[0].second));
    if (jobs.size() > 1) {
      std::string list;
      for (const auto& [path, p] : jobs)
        list += (list.empty() ? "" : ", ") +
                (p ? p->job_id + " at " + p->address : path + " (" + p.error() + ")");
      return found(dir_of(pointer) + "/jobs",
                   make_error(std::to_string(jobs.size()) + " jobs on this host (" + list +
                              "): pass --address HOST:PORT or set ATL_JOB_ID"));
    }
    if (shared) return found(pointer, std::move(*shared));
  }
  if (!query.job_id.empty()) {
    if (asked_ended) {
      const JobPointer& p = asked_ended->second;
      return found(
          asked_ended->first,
          make_error("job " + query.job_id + " has ended: " +
                     (p.pod.empty() ? std::string("the process") : p.pod) + " (pid " +
                     std::to_string(p.writer_pid) + ") that published " + asked_ended->first +
                     " is gone; its logs and state stay in its head's state dir"));
    }
    if (!query.address.empty()) return std::nullopt;
    return found("", make_error("no job " + query.job_id + " on this host (no " +
                                job_file_beside(job_pointer_paths().front(), query.job_id) +
                                "): check ATL_JOB_ID, or pass --address HOST:PORT"));
  }
  if (query.address.empty() && !ended.empty()) {
    std::sort(ended.begin(), ended.end());
    ended.erase(std::unique(ended.begin(), ended.end()), ended.end());
    std::string list;
    for (const auto& id : ended) list += (list.empty() ? "" : ", ") + id;
    return found("", make_error("no running job on this host (ended: " + list +
                                "): pass --address HOST:PORT of a running head"));
  }
  return std::nullopt;
}

}  // namespace atl::os
