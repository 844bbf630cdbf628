#include "atl/core/ray_cluster.hpp"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "atl/core/shell.hpp"

namespace atl {

namespace {

// Python for both of atl's waits on Ray (a worker pod's for its head's node,
// the driver's for every node): `gcs_nodes_alive(address)` is a function
// giving the addresses of the nodes alive in the GCS there, asked with Ray's
// own GCS client (what `ray start` and `ray health-check` ask with); None
// where this Ray has no such client. Ray's module of its raylet is named in
// two pieces: the commands' text is their processes' command lines, where
// `pkill -f raylet` (or a test's search for Ray's raylet) must find Ray's,
// not atl's waits.
constexpr const char* kGcsNodesAlive = R"PY(import importlib
def gcs_nodes_alive(address):
    try:
        client_type = importlib.import_module('ray._ray' 'let').GcsClient
        from ray.core.generated.gcs_pb2 import GcsNodeInfo
    except (ImportError, AttributeError):
        return None
    client = client_type(address=address)
    if not hasattr(client, 'get_all_node_info'): return None
    def alive():
        infos = client.get_all_node_info(timeout=5).values()
        return {n.node_manager_address for n in infos if n.state == GcsNodeInfo.ALIVE}
    return alive
)PY";

// A worker pod's wait for its Ray head's node, and its Ray node's start:
// argv the GCS address, the head's node address, the deadline (epoch
// seconds), then the `ray start` command. Once the head's node is alive in
// the GCS: where `ray` is pip's console script of this very Python, its main
// runs here (Ray is imported already: a second Python start saved, ~0.5 s
// of CPU on the node's way up), and the exit is Ray's; else exit 10 (the
// caller starts it). Exit 2 where Ray has no GCS client to ask, 1 when the
// head's node was not alive by the deadline.
constexpr const char* kHeadNodeAlive = R"PY(import os, shutil, sys, time
address, head, deadline, ray_argv = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
try:
    alive = gcs_nodes_alive(address)
except Exception:
    sys.exit(1)
if alive is None: sys.exit(2)
def head_alive():
    try:
        return head in alive()
    except Exception:  # the GCS restarting, say: asked again
        return False
while not head_alive():
    if time.time() >= deadline: sys.exit(1)
    time.sleep(0.1)
del alive
def console_script_of_this_python(path):
    try:
        with open(shutil.which(path) or path) as f: text = f.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    first = text.split('\n', 1)[0]
    if not first.startswith('#!') or 'from ray.scripts.scripts import main' not in text:
        return False
    words = first[2:].split()
    here = os.path.abspath(sys.executable)
    return bool(words) and os.path.dirname(words[0]) == os.path.dirname(here) and \
        os.path.realpath(words[0]) == os.path.realpath(here)
if not console_script_of_this_python(ray_argv[0]): sys.exit(10)
sys.argv = ray_argv
from ray.scripts.scripts import main
sys.exit(main())
)PY";

std::string head_address(const JobSpec& job, const std::string& head_host) {
  return head_host + ":" + std::to_string(job.ray_port);
}

}  // namespace

std::string ray_node_host(const std::string& host) {
  if (host == "127.0.0.1" || host == "localhost" || host == "::1") return "127.0.1.1";
  return host;
}

Status ray_addresses_distinct(const std::string& head_host, const std::vector<RayPod>& workers) {
  std::map<std::string, std::string> taken{{head_host, "Ray's head"}};
  for (const auto& w : workers) {
    auto [it, fresh] = taken.emplace(w.address, "pod " + w.pod);
    if (!fresh)
      return make_error("ray mode: " + it->second + " and pod " + w.pod + " share the address " +
                        w.address +
                        ": Ray needs an address per node (run each pod in its own network "
                        "namespace, or give each its own with workernode --advertise)");
  }
  return Ok{};
}

std::string ray_temp_dir(const std::string& job_id, const std::string& node, int ray_port) {
  // FNV-1a of the job id, and of its GCS port where that is its own (two
  // jobs of one id on one host: ray_port is then each one's).
  const std::string key =
      ray_port == JobSpec{}.ray_port ? job_id : job_id + ":" + std::to_string(ray_port);
  std::uint32_t h = 2166136261u;
  for (unsigned char c : key) h = (h ^ c) * 16777619u;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  return "/tmp/atl-ray-" + std::string(hex) + "-" + node;
}

std::string ray_private_dir(const std::string& dir) {
  // Ray makes its temp dir and its session, log and socket dirs 0777, and
  // its files as the umask says: inside a 0700 dir of the job's user (Ray's
  // own is kRaysOwnDir below it; umask 077 for the rest), no other uid in
  // the pod reads its logs or swaps its files. The name is predictable: one
  // made first by another user, or a symlink, is refused rather than used.
  const std::string d = shell_quote(dir);
  return "umask 077; mkdir -p " + d + " 2>/dev/null; if [ -L " + d + " ] || [ ! -O " + d +
         " ] || ! chmod 700 " + d + "; then echo \"atl: " + dir +
         " is not this user's own directory: Ray is not started there\" >&2; exit 3; fi; ";
}

std::vector<std::string> ray_resource_flags(const JobSpec& job) {
  std::vector<std::string> flags;
  const NodeResources& r = job.node_spec;
  if (r.cpus > 0) flags.insert(flags.end(), {"--num-cpus", std::to_string(r.cpus)});
  if (r.gpus > 0) flags.insert(flags.end(), {"--num-gpus", std::to_string(r.gpus)});
  if (r.memory > 0) flags.insert(flags.end(), {"--memory", std::to_string(r.memory)});
  if (job.ray_agent_port > 0)
    flags.insert(flags.end(),
                 {"--dashboard-agent-listen-port", std::to_string(job.ray_agent_port)});
  if (job.ray_any_worker_ports)
    flags.insert(flags.end(), {"--min-worker-port", "0", "--max-worker-port", "0"});
  auto store = job.env.find("RAY_OBJECT_STORE_MEMORY");
  if (store != job.env.end()) {
    flags.insert(flags.end(), {"--object-store-memory", store->second});
  } else if (r.memory > 0) {
    auto bytes = static_cast<std::int64_t>(static_cast<double>(r.memory) * kObjectStoreShare);
    flags.insert(flags.end(), {"--object-store-memory", std::to_string(bytes)});
  }
  return flags;
}

std::string ray_head_command(const JobSpec& job, const std::string& ray_bin,
                             const std::string& host) {
  // Bound to the pod's own address, never 0.0.0.0. The dashboard (whose job
  // API runs commands) listens on the head pod's loopback only: atl's
  // dashboard serves it at /ray/, behind its login.
  std::vector<std::string> argv = {ray_bin,
                                   "start",
                                   "--head",
                                   "--block",
                                   "--port",
                                   std::to_string(job.ray_port),
                                   "--node-ip-address",
                                   host,
                                   "--dashboard-host",
                                   "127.0.0.1",
                                   "--dashboard-port",
                                   std::to_string(job.ray_dashboard_port),
                                   "--temp-dir",
                                   ray_temp_dir(job.job_id, "h", job.ray_port) + kRaysOwnDir,
                                   "--disable-usage-stats"};
  if (job.ray_client_port > 0)
    argv.insert(argv.end(), {"--ray-client-server-port", std::to_string(job.ray_client_port)});
  auto flags = ray_resource_flags(job);
  argv.insert(argv.end(), flags.begin(), flags.end());
  return ray_private_dir(ray_temp_dir(job.job_id, "h", job.ray_port)) + "exec " + shell_join(argv);
}

std::string ray_worker_command(const JobSpec& job, const std::string& ray_bin,
                               const std::string& python, const std::string& head_host,
                               const std::string& host, std::chrono::seconds wait, int worker) {
  const std::string head = head_address(job, head_host);
  const std::string temp_dir = ray_temp_dir(job.job_id, "w" + std::to_string(worker), job.ray_port);
  std::vector<std::string> argv = {ray_bin,
                                   "start",
                                   "--address",
                                   head,
                                   "--block",
                                   "--node-ip-address",
                                   host,
                                   "--temp-dir",
                                   temp_dir + kRaysOwnDir,
                                   "--disable-usage-stats"};
  auto flags = ray_resource_flags(job);
  argv.insert(argv.end(), flags.begin(), flags.end());
  // The head may still be starting: ask its GCS until it answers. Its GCS
  // answers before its own node is registered there, and a node started in
  // between fails ("No node info found for head node"; seen with two Ray
  // jobs starting at once on two cores): started again until the deadline,
  // as long as it never came up (Ray writes ray_current_cluster in its temp
  // dir once it did; a node that ran and then failed is a fault as before).
  // First, while the GCS does not even listen, atl-guard's TCP probe (a
  // static program, beside workernode on the PATH of what it starts): each
  // `ray health-check` is a Python start with Ray imported, ~0.5 s of CPU
  // taken from the head's own start on a small pod.
  std::string check = shell_join({ray_bin, "health-check", "--address", head});
  const std::string probe =
      "if command -v atl-guard >/dev/null 2>&1; then until atl-guard --tcp-ready " +
      shell_quote(head_host) + " " + std::to_string(job.ray_port) +
      "; do [ $(date +%s) -ge $deadline ] && break; sleep 0.1; done; fi; ";
  // Then, where the image's Python has Ray's GCS client (what `ray start`
  // itself asks), until the head's own node is alive there, asked every
  // 0.1 s: a `ray start` that comes before it looks for it every 2 s (Ray's
  // own retries), and a worker started as the GCS opened lost up to 2 s
  // there. That Python then runs `ray start` itself where it can (see
  // kHeadNodeAlive; a node that came up ends the command with Ray's exit).
  // A Python without the client, a head not alive by the deadline, or a
  // start in it that failed before its node came up go on as before: `ray
  // health-check` until the GCS answers, then `ray start`.
  const std::vector<std::string> wait_argv = {
      python, "-c", std::string(kGcsNodesAlive) + kHeadNodeAlive, head, head_host};
  const std::string came_up = shell_quote(temp_dir + kRaysOwnDir + "/ray_current_cluster");
  return ray_private_dir(temp_dir) + "deadline=$(($(date +%s) + " + std::to_string(wait.count()) +
         ")); " + probe + shell_join(wait_argv) + " $deadline " + shell_join(argv) +
         "; rc=$?; if [ $rc -ne 10 ]; then if [ -e " + came_up + " ]; then exit $rc; fi; until " +
         check +
         " >/dev/null 2>&1; do if [ $(date +%s) -ge $deadline ]; then echo \"Ray's head at " +
         head + " did not answer within " + std::to_string(wait.count()) +
         "s\" >&2; exit 3; fi; sleep 0.2; done; fi; while :; do " + shell_join(argv) +
         "; rc=$?; if [ -e " + came_up +
         " ] || [ $(date +%s) -ge $deadline ]; then exit $rc; fi; echo \"atl: Ray's head node "
         "is not in its GCS yet: starting this node again\" >&2; sleep 1; done";
}

std::string ray_job_config_json(const JobSpec& job) {
  nlohmann::json runtime_env = nlohmann::json::object();
  for (const auto& [key, text] : job.ray_runtime_env)
    runtime_env[key] = nlohmann::json::parse(text, nullptr, false);
  nlohmann::json vars = nlohmann::json::object();
  for (const auto& [k, v] : job.runtime_env_vars) vars[k] = v;
  if (!vars.empty()) runtime_env["env_vars"] = vars;
  if (!job.working_dir.empty()) runtime_env["working_dir"] = job.working_dir;
  return nlohmann::json{{"runtime_env", runtime_env}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

EnvMap ray_driver_env(const JobSpec& job, const AtlEndpoint& atl, const ProcessSite& head) {
  EnvMap env = build_process_env(job, atl, head);
  env["RAY_ADDRESS"] = head_address(job, head.master_addr);
  env["RAY_JOB_CONFIG_JSON_ENV_VAR"] = ray_job_config_json(job);
  return env;
}

std::string ray_driver_command(const JobSpec& job, const std::string& python,
                               const std::string& head_host, const std::vector<RayPod>& workers,
                               std::chrono::seconds wait, std::chrono::seconds progress_every) {
  nlohmann::json pods = nlohmann::json::object();
  for (const auto& w : workers) pods[w.address] = w.pod;
  // Ray's own view: alive nodes by address. The head is the driver's own.
  // The wait is no Ray driver of its own: a driver's first connection makes
  // the head's raylet start worker processes for its job (Ray's prestart, a
  // Python start with Ray imported each, ~0.5 s of CPU), wasted on a wait and
  // taken from the nodes' own start. It asks Ray's GCS for its node table
  // (GcsClient, what `ray health-check` and `ray start` use), after a TCP
  // connect finds the GCS listening (before that, Ray is not even imported);
  // a Ray without that client is asked as before, ray.init and ray.nodes().
  // The job's own driver is then Ray's first, and its workers are started
  // beside its own start.
  std::string script = std::string(kGcsNodesAlive) + R"PY(import json, os, socket, sys, time
pods = json.loads(sys.argv[1]); head = sys.argv[2]; wait = float(sys.argv[3])
address = sys.argv[4]; every = float(sys.argv[5])
start = time.time(); deadline = start + wait; said = start
def not_ready(line):
    print(line, file=sys.stderr, flush=True)
    path = os.environ.get('TORCHELASTIC_ERROR_FILE')
    if path:
        try:
            with open(path, 'w') as f: json.dump({'message': line}, f)
        except OSError:
            pass
    sys.exit(@EXIT@)
def missing_of(alive):
    missing = [pod for addr, pod in sorted(pods.items()) if addr not in alive]
    if head not in alive: missing.insert(0, 'the head')
    return missing
def not_yet(missing, pause, error=None):
    global said
    if time.time() - said >= every:
        said = time.time()
        print('[atl] waiting for Ray (%ds of %gs): not alive yet: %s' % (said - start, wait, ', '.join(missing)), flush=True)
    if time.time() > deadline:
        not_ready('Ray cluster not ready after %gs: ' % wait + (error or 'not alive in Ray: ' + ', '.join(missing)))
    time.sleep(pause)
host, _, port = address.rpartition(':')
while True:
    try:
        socket.create_connection((host.strip('[]'), int(port)), timeout=1).close()
        break
    except OSError:
        not_yet(missing_of(set()), 0.1)
import ray
joined = False
try:
    alive = gcs_nodes_alive(address)
except Exception as e:
    not_ready('Ray cluster not ready: its GCS at %s does not answer: %s' % (address, e))
if alive is None:
    # Ray's GCS answers before the head's node is in it; ray.init in
    # between fails ("No node info found"): asked again until the deadline.
    while True:
        try:
            ray.init(address=address, logging_level='ERROR', log_to_driver=False)
            joined = True
            break
        except ConnectionError as e:
            ray.shutdown()
            not_yet(missing_of(set()), 0.5, str(e))
    def alive():
        return {n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']}
while True:
    error = None
    try:
        missing = missing_of(alive())
    except Exception as e:  # the GCS restarting, say: asked again
        missing, error = missing_of(set()), str(e)
    if not missing: break
    not_yet(missing, 0.2, error)
if joined: ray.shutdown()
print('[atl] Ray cluster ready: %d nodes' % (len(pods) + 1), flush=True)
)PY";
  script.replace(script.find("@EXIT@"), 6, std::to_string(kRayNotReadyExit));
  return shell_join({python, "-c", script, pods.dump(), head_host, std::to_string(wait.count()),
                     head_address(job, head_host), std::to_string(progress_every.count())}) +
         " && exec /bin/sh -c " + shell_quote(job.entrypoint);
}

RayRecovery ray_recovery(const RayProcesses& p) {
  if (!p.driver_ended) return RayRecovery::driver_stopping;
  if (p.nodes_ended == 0 && p.nodes_up > 0) return RayRecovery::driver_only;
  if (p.nodes_up == 0) return RayRecovery::whole_cluster;
  return RayRecovery::cluster_stopping;
}

}  // namespace atl
