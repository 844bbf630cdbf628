"""Typed wrong, answered with what was probably meant: a mistyped command,
option or job spec field is refused in one line (exit 2) that names the
nearest right one ("did you mean"), as git and kubectl do; nothing starts."""
import json
import os
import subprocess
import tempfile

import pytest

from conftest import BIN


def run(program, *args):
    return subprocess.run([os.path.join(BIN, program), *args], capture_output=True, text=True,
                          timeout=60)


def refused(r, line):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.strip() == line, r.stderr
    assert "system_error(" not in r.stderr + r.stdout


def test_a_mistyped_command_or_option_names_the_nearest(tmp_path):
    refused(run("atlctl", "stauts"),
            "atlctl: unknown command 'stauts' (did you mean 'status'?) (see atlctl --help)")
    refused(run("atlctl", "recovr"),
            "atlctl: unknown command 'recovr' (did you mean 'recover'?) (see atlctl --help)")
    refused(run("atlctl", "deploy"), "atlctl: unknown command 'deploy' (see atlctl --help)")
    refused(run("atlctl", "--adress", "h:1", "status"),
            "atlctl: unknown option '--adress' (did you mean '--address'?) (see atlctl --help)")
    refused(run("atlctl", "status", "--jsn"),
            "atlctl: status: unrecognised option '--jsn' (did you mean '--json'?)")
    refused(run("headnode", "--workrs", "2", "--state-dir", str(tmp_path), "--", "true"),
            "headnode: unrecognised option '--workrs' (did you mean '--workers'?)")
    refused(run("workernode", "--haed", "127.0.0.1:1"),
            "workernode: unrecognised option '--haed' (did you mean '--head'?)")
    assert not os.listdir(tmp_path), "nothing was started"


def test_a_mistyped_job_spec_field_names_the_nearest(tmp_path):
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({"job_id": "jo-typo", "entrypoint": "true", "max_restart": 3}))
    r = run("headnode", "--job", str(spec), "--state-dir", str(tmp_path / "state"))
    refused(r, "headnode: %s: job spec: unknown field 'max_restart' (did you mean "
               "'max_restarts'?)" % spec)
    spec.write_text(json.dumps({"job_id": "jo-typo", "entrypoint": "true",
                                "spec": {"gpu": 8}}))
    r = run("headnode", "--job", str(spec), "--state-dir", str(tmp_path / "state"))
    refused(r, "headnode: %s: job spec: unknown field 'spec.gpu' (did you mean 'gpus'?)" % spec)


def test_status_takes_kubectls_output_and_watch_flags():
    from conftest import Cluster
    c = Cluster(1, mode="spmd", entrypoint="sleep 8", extra=("--linger", "30s"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        as_json = json.loads(c.atlctl("status", "-o", "json").stdout)
        assert as_json["state"] == "command" and "ranks" in as_json
        assert "Ranks:" in c.atlctl("status", "-o", "wide").stdout
        refused(c.atlctl("status", "-o", "yaml", check=False),
                "atlctl: status: -o: 'yaml' is not an output (json or wide)")
        refused(c.atlctl("status", "-w", "--json", check=False),
                "atlctl: status: --watch prints lines as the state changes, not JSON")
        # A line each time the state changes, done when the job has ended.
        watched = c.atlctl("status", "-w").stdout.splitlines()
        assert watched == ["Job status:  command", "Job status:  succeeded"], watched
    finally:
        c.stop()


def test_status_watch_prints_every_change_however_short():
    # A watch that polled every 250 ms missed states shorter than that: a
    # restart of 1,000 pods spends ~0.25 s in `restarting`, and a script
    # waiting for it to leave `command` waited forever. `atlctl stop` then
    # `atlctl recover` at once leaves debugStop for a few milliseconds: each
    # of three must be printed; so must a pod's eviction's restart.
    import select
    import signal
    import time
    from conftest import Cluster, workernode_of
    c = Cluster(1, mode="spmd", entrypoint="exec sleep 600", local_workers=2,
                extra=("--spare-workers", "1"))
    watch = None
    try:
        assert c.wait_for("initializing -> command"), c.output()
        watch = subprocess.Popen([os.path.join(BIN, "atlctl"), "status", "-w"], env=c.env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        lines, buf = [], b""

        def read_lines(count, timeout=30):
            nonlocal buf
            deadline = time.time() + timeout
            while len(lines) < count and time.time() < deadline:
                if select.select([watch.stdout], [], [], 0.2)[0]:
                    got = os.read(watch.stdout.fileno(), 4096)
                    if not got:
                        break
                    buf += got
                    *whole, buf = buf.split(b"\n")
                    lines.extend(w.decode() for w in whole)
            return lines

        assert read_lines(1) == ["Job status:  command"], (lines, c.output())
        for _ in range(3):
            c.atlctl("stop")
            c.atlctl("recover")
        expected = ["Job status:  command"] + ["Job status:  debugStop",
                                               "Job status:  command"] * 3
        assert read_lines(len(expected)) == expected, (lines, c.output())
        # The active pod deleted as Kubernetes deletes one (its workernode
        # SIGTERMed): the spare takes its place, the job restarts in well
        # under a poll's period, and the watch says so.
        active = [p["name"] for p in json.loads(c.atlctl("status", "--json").stdout)["pods"]
                  if p.get("role") == "active"]
        assert len(active) == 1, c.output()
        os.kill(workernode_of(active[0]), signal.SIGTERM)
        expected += ["Job status:  restarting", "Job status:  command"]
        assert read_lines(len(expected)) == expected, (lines, c.output())
        assert watch.poll() is None  # the job runs on: so does the watch
    finally:
        if watch is not None:
            watch.kill()
            watch.wait()
        c.stop()


def test_a_workernode_says_every_10_s_whom_it_waits_for():
    import socket
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = run("workernode", "--head", "127.0.0.1:%d" % port, "--name", "jo-wait-worker-0",
            "--insecure", "--connect-timeout", "14s")
    assert r.returncode == 3, (r.returncode, r.stderr)
    lines = [l for l in r.stderr.splitlines() if "TLS is off" not in l]
    assert len(lines) == 2, lines
    assert lines[0].startswith("workernode: waiting for the head at 127.0.0.1:%d (" % port), lines
    assert "s so far, at most 14s): nothing answers there" in lines[0], lines
    assert lines[1].startswith("workernode: cannot reach the head at 127.0.0.1:%d within 14s"
                               % port), lines


def test_headnodes_help_is_grouped_with_examples():
    r = run("headnode", "--help")
    assert r.returncode == 0, r.stderr
    assert "Examples:\n  headnode --workers 2 --nproc-per-node 8 -- python train.py" in r.stdout
    titles = [l for l in r.stdout.splitlines() if l.endswith(":") and not l.startswith(" ")]
    assert titles == ["Examples:", "Options:", "General:", "Pods and ranks:",
                      "Faults: restarts, liveness, hangs:", "Ray mode:",
                      "Dashboard, metrics, TensorBoard:", "Network and security:"], titles


# ---------------------------------------------------------------------------
# The table of common mistakes (docs/mistakes.md): what a hand new to atl
# types, from habit (kubectl, torchrun, Ray) or haste, each answered with one
# line that names what is wrong and what to do, a non-zero exit, and no
# library's internals. `argv(ctx)` is the command line; `says` are the parts
# of the one line; a job that ran is judged by its `job failed:` line.

class Mistake:
    def __init__(self, key, did, argv, code, *says, job=False, live=False, env=None):
        self.key, self.did, self.argv, self.code, self.says = key, did, argv, code, says
        self.job, self.live, self.env = job, live, env or {}


def _headnode_job(ctx, *args):
    return ["headnode", "--workers", "1", "--local-workers", "1", "--insecure", "--port", "0",
            "--dashboard-port", "off", "--state-dir", tempfile.mkdtemp(dir=ctx.tmp), "--mode", "spmd",
            *args]


MISTAKES = [
    Mistake("command-typo", "`atlctl stauts`", lambda c: ["atlctl", "stauts"], 2,
            "unknown command 'stauts' (did you mean 'status'?)"),
    Mistake("kubectl-exec", "`atlctl exec -it POD -- bash`, kubectl's habit",
            lambda c: ["atlctl", "exec", "-it", "pod", "--", "bash"], 2,
            "unknown command 'exec'", "atlctl run -f -r RANKS CMD", "the dashboard's terminal"),
    Mistake("kubectl-get", "`atlctl get pods`", lambda c: ["atlctl", "get", "pods"], 2,
            "unknown command 'get'", "atlctl status -v"),
    Mistake("option-typo", "`atlctl --adress H:P status`",
            lambda c: ["atlctl", "--adress", "127.0.0.1:1", "status"], 2,
            "unknown option '--adress' (did you mean '--address'?)"),
    Mistake("no-address", "`atlctl status` outside any pod of a job",
            lambda c: ["atlctl", "status"], 2, "no supervisor address", "pass --address HOST:PORT",
            env={"ATL_ADDRESS": None, "ATL_JOB_FILE": "{tmp}/none.json"}),
    Mistake("address-without-port", "`atlctl --address 127.0.0.1 status`",
            lambda c: ["atlctl", "--address", "127.0.0.1", "status"], 2,
            "bad address '127.0.0.1': expected HOST:PORT"),
    Mistake("no-credentials", "an address but no `--tls-dir`",
            lambda c: ["atlctl", "--address", "127.0.0.1:1", "status"], 2,
            "no TLS credentials", "give --tls-dir DIR", env={"ATL_TLS_DIR": None}),
    Mistake("nothing-listens", "the address of a job that ended",
            lambda c: ["atlctl", "--insecure", "--address", "127.0.0.1:%d" % c.closed, "status"], 4,
            "cannot reach the supervisor at 127.0.0.1:", "the address is wrong"),
    Mistake("another-jobs-credentials", "`--tls-dir` of another job",
            lambda c: ["atlctl", "--address", c.live.address, "--tls-dir", c.other_tls, "status"],
            4, "refused this process's TLS certificate", "check --tls-dir", live=True),
    Mistake("list-with-spaces", "`atlctl delete -p POD0 POD1` (a list by spaces)",
            lambda c: ["atlctl", "delete", "-p", "pod-0", "pod-1"], 2,
            "unexpected word 'pod-1'", "a list is comma-separated"),
    Mistake("torchrun-option", "`headnode --nproc_per_node 2`, torchrun's spelling",
            lambda c: ["headnode", "--nproc_per_node", "2", "--", "true"], 2,
            "unrecognised option '--nproc_per_node' (did you mean '--nproc-per-node'?)"),
    Mistake("torchrun-mode", "`headnode --mode torchrun`",
            lambda c: ["headnode", "--mode", "torchrun", "--", "true"], 2,
            "bad mode 'torchrun': expected spmd, driver or ray",
            "torchrun's one process per rank is spmd"),
    Mistake("no-entrypoint", "`headnode --workers 2` and no command",
            lambda c: ["headnode", "--workers", "2"], 2,
            "field 'entrypoint' is empty", "give --entrypoint CMD or CMD after --"),
    Mistake("duration-without-unit", "`--heartbeat-timeout 5`",
            lambda c: ["headnode", "--heartbeat-timeout", "5", "--", "true"], 2,
            "bad duration '5'", "give a unit", "e.g. 5s"),
    Mistake("missing-job-file", "`headnode --job` of a file not there",
            lambda c: ["headnode", "--job", str(c.tmp / "missing.json")], 2,
            "missing.json: cannot read: No such file or directory"),
    Mistake("json-syntax", "a job file with a trailing comma",
            lambda c: ["headnode", "--job", c.write("trailing.json",
                                                    '{"job_id": "jo-m",\n "entrypoint": "true",\n}')],
            2, "not valid JSON: line 3, column 1"),
    Mistake("spec-field-typo", "`\"max_restart\": 3` in the job file",
            lambda c: ["headnode", "--job", c.write("typo.json", json.dumps(
                {"job_id": "jo-m", "entrypoint": "true", "max_restart": 3}))], 2,
            "unknown field 'max_restart' (did you mean 'max_restarts'?)"),
    Mistake("port-taken", "`headnode --port` another process holds",
            lambda c: ["headnode", "--workers", "1", "--insecure", "--port", str(c.taken),
                       "--dashboard-port", "off", "--state-dir", tempfile.mkdtemp(dir=c.tmp), "--", "true"],
            1, "cannot listen on 127.0.0.1:", "taken by", "(pid %d)" % os.getpid(),
            "pass another --port (0: any free one)"),
    Mistake("dashboard-port-taken", "`--dashboard-port` another process holds",
            lambda c: ["headnode", "--workers", "1", "--insecure", "--port", "0",
                       "--dashboard-port", str(c.taken), "--state-dir", tempfile.mkdtemp(dir=c.tmp), "--",
                       "true"],
            1, "--dashboard-port: cannot listen on", "taken by", "(pid %d)" % os.getpid(),
            "pass another port (0: any free one)"),
    Mistake("tls-dir-missing", "`--tls-dir` of a folder not there",
            lambda c: ["headnode", "--tls-dir", "/nonexistent-atl", "--", "true"], 2,
            "--tls-dir: cannot read /nonexistent-atl/ca.pem"),
    Mistake("workernode-option-typo", "`workernode --haed H:P`",
            lambda c: ["workernode", "--haed", "127.0.0.1:1"], 2,
            "unrecognised option '--haed' (did you mean '--head'?)"),
    Mistake("workernode-wrong-head", "`workernode --head` of a host that is not there",
            lambda c: ["workernode", "--head", "nohost.invalid:6380", "--name", "jo-m-worker-0",
                       "--insecure", "--connect-timeout", "2s"], 3,
            "cannot reach the head at nohost.invalid:6380 within 2s", "the address is wrong"),
    Mistake("entrypoint-typo", "`-- pythn train.py` (a typo in the command)",
            lambda c: _headnode_job(c, "--", "pythn-atl train.py"), 1,
            "rank 0 on pod", "exit code 127 (a shell's word for a command not found",
            "check the command's first word and PATH", job=True),
    Mistake("script-not-executable", "`-- ./train.sh` without its execute bit",
            lambda c: _headnode_job(c, "--", c.write("train.sh", "echo hi\n")), 1,
            "exit code 126", "chmod +x it, or name its interpreter", job=True),
    Mistake("working-dir-missing", "`--working-dir` a path the pods lack",
            lambda c: _headnode_job(c, "--working-dir", "/nonexistent-atl", "--", "true"), 1,
            "working dir /nonexistent-atl is not writable: No such file or directory",
            "make it on every pod", job=True),
    Mistake("run-without-stop", "`atlctl run CMD` while the job trains",
            lambda c: ["atlctl", "run", "echo", "hi"], 3,
            "run needs debugStop", "run atlctl stop first, or use run -f", live=True),
    Mistake("recover-without-stop", "`atlctl recover` while the job trains",
            lambda c: ["atlctl", "recover"], 3,
            "recover only works from debugStop (run atlctl stop first)", live=True),
    Mistake("rank-out-of-range", "`-r 99` in a job of 2 ranks",
            lambda c: ["atlctl", "run", "-f", "-r", "99", "echo"], 2,
            "rank 99 in '99' is out of range: the job has ranks 0-1", live=True),
    Mistake("unknown-pod", "`atlctl delete -p` a pod's wrong name",
            lambda c: ["atlctl", "delete", "-p", "worker-0"], 2,
            "unknown pod 'worker-0' (did you mean '", "-worker-0'?)", live=True),
    Mistake("kubectl-output", "`atlctl status -o yaml`",
            lambda c: ["atlctl", "status", "-o", "yaml"], 2,
            "-o: 'yaml' is not an output (json or wide)", live=True),
    Mistake("since-without-unit", "`atlctl logs --since 5`",
            lambda c: ["atlctl", "logs", "--since", "5"], 2,
            "--since: bad duration '5'", "give a unit", live=True),
    Mistake("run-without-command", "`atlctl run -f` and no command",
            lambda c: ["atlctl", "run", "-f"], 2,
            "run: no command given", "e.g. atlctl run -f -r all nvidia-smi", live=True),
]


class _Context:
    def __init__(self, tmp):
        import socket
        self.tmp = tmp
        self.holder = socket.socket()  # a port this process listens on
        self.holder.bind(("127.0.0.1", 0))
        self.holder.listen()
        self.taken = self.holder.getsockname()[1]
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            self.closed = s.getsockname()[1]
        self.live = None
        self.other_tls = str(tmp / "other-tls")
        subprocess.run([os.path.join(BIN, "headnode"), "--make-tls", self.other_tls,
                        "--job-id", "jo-other"], check=True, capture_output=True, timeout=60)

    def write(self, name, text):
        path = self.tmp / name
        path.write_text(text)
        os.chmod(path, 0o644)
        return str(path)


@pytest.fixture(scope="module")
def mistakes_context(tmp_path_factory):
    from conftest import Cluster
    ctx = _Context(tmp_path_factory.mktemp("mistakes"))
    ctx.live = Cluster(2, mode="spmd", entrypoint="sleep 600")
    try:
        assert ctx.live.wait_for("initializing -> command"), ctx.live.output()
        yield ctx
    finally:
        ctx.live.stop()
        ctx.holder.close()


@pytest.mark.parametrize("m", MISTAKES, ids=[m.key for m in MISTAKES])
def test_a_common_mistake_is_answered_in_one_line(m, mistakes_context):
    ctx = mistakes_context
    env = dict(ctx.live.env if m.live else os.environ)
    env.pop("ATL_ADDRESS", None)
    env.pop("ATL_TLS_DIR", None)
    if not m.live:
        env["ATL_JOB_FILE"] = str(ctx.tmp / "no-job.json")
    for k, v in m.env.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v.format(tmp=ctx.tmp)
    argv = m.argv(ctx)
    r = subprocess.run([os.path.join(BIN, argv[0]), *argv[1:]], capture_output=True, text=True,
                       timeout=120, env=env, cwd=str(ctx.tmp), stdin=subprocess.DEVNULL)
    everything = r.stdout + r.stderr
    assert r.returncode == m.code, (r.returncode, everything)
    assert "system_error(" not in everything and "caf::" not in everything, everything
    if m.job:
        lines = [l for l in r.stdout.splitlines() if l.startswith("job failed: ")]
    else:
        lines = [l for l in r.stderr.splitlines() if "warning:" not in l]
    assert len(lines) == 1, everything
    for part in m.says:
        assert part in lines[0], (part, lines[0])


def test_the_docs_table_lists_every_mistake_the_suite_tries():
    # docs/mistakes.md is the table users read; a row per case here, in order.
    import re
    from conftest import ROOT
    text = open(os.path.join(ROOT, "docs", "mistakes.md")).read()
    keys = re.findall(r"^\| \d+ \| `([a-z-]+)` \|", text, re.M)
    assert keys == [m.key for m in MISTAKES], keys
