"""Typed wrong, answered with what was probably meant: a mistyped command,
option or job spec field is refused in one line (exit 2) that names the
nearest right one ("did you mean"), as git and kubectl do; nothing starts."""
import json
import os
import subprocess

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
