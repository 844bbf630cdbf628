"""scripts/render-k8s.py: the manifests validate against Kubernetes' schema
(strict: an unknown field fails), carry the job's names, sizes and
credentials, and bad input is one line and exit 2."""
import base64
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RENDER = os.path.join(ROOT, "scripts", "render-k8s.py")
EXAMPLE = os.path.join(ROOT, "deploy", "k8s", "job.example.json")
VALIDATE = os.environ.get("ATL_K8S_VALIDATE", "kubernetes-validate")
K8S_VERSION = "1.30.0"


# The folders the tests make, removed after the module's tests, failed ones'
# included.
_MADE = []


@pytest.fixture(scope="module", autouse=True)
def _remove_made_folders():
    yield
    for folder in _MADE:
        shutil.rmtree(folder, ignore_errors=True)


def made_folder(prefix):
    _MADE.append(tempfile.mkdtemp(prefix=prefix))
    return _MADE[-1]


def render(*args):
    out = made_folder("atl-k8s-")
    r = subprocess.run([sys.executable, RENDER, *args, "--out", out], capture_output=True,
                       text=True, timeout=60)
    return r, out


def validate(paths):
    return subprocess.run([VALIDATE, "--strict", "-k", K8S_VERSION, *paths],
                          capture_output=True, text=True, timeout=120)


def load(out):
    return {os.path.basename(p): json.load(open(p)) for p in sorted(glob.glob(out + "/*.json"))}


def test_the_example_renders_to_valid_manifests():
    r, out = render(EXAMPLE, "--image", "registry.example/atl:1", "--namespace", "train")
    assert r.returncode == 0, r.stderr
    files = sorted(glob.glob(out + "/*.json"))
    assert len(files) == 6
    v = validate(files)
    assert v.returncode == 0, v.stdout + v.stderr
    assert v.stdout.count("passed") == 6, v.stdout

    objs = load(out)
    kinds = [o["kind"] for o in objs.values()]
    assert kinds == ["ConfigMap", "Secret", "Service", "Service", "Job", "Job"]
    job_id = "jo-example0000000000"
    cm, secret, head_svc, worker_svc, head, worker = objs.values()
    assert json.loads(cm["data"]["job.json"]) == json.load(open(EXAMPLE))
    # Credentials made by headnode --make-tls for this job.
    for name in ("ca.pem", "cert.pem"):
        assert base64.b64decode(secret["data"][name]).startswith(b"-----BEGIN CERTIFICATE")
    assert b"PRIVATE KEY" in base64.b64decode(secret["data"]["key.pem"])
    token = base64.b64decode(secret["data"]["dashboard-token"]).decode()
    assert len(token) == 44 and token.endswith("\n") and token[:-1].isalnum()
    assert [p["port"] for p in head_svc["spec"]["ports"]] == [6380, 8265]
    assert head_svc["spec"]["clusterIP"] == "None"
    assert head_svc["metadata"]["namespace"] == "train"
    # Workers: an Indexed Job of workers + spares, named <job-id>-worker-<i>.
    ws = worker["spec"]
    assert ws["completionMode"] == "Indexed" and ws["completions"] == ws["parallelism"] == 3
    pod = ws["template"]["spec"]
    assert pod["subdomain"] == worker_svc["metadata"]["name"] == f"{job_id}-worker"
    c = pod["containers"][0]
    assert f"{job_id}-worker-$(JOB_COMPLETION_INDEX)" in c["command"]
    assert f"{job_id}-head.train.svc:6380" in c["command"]
    declared = [e["name"] for e in c["env"]]
    assert "JOB_COMPLETION_INDEX" in declared and "NODE_NAME" in declared  # for $(...) expansion
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert c["resources"]["requests"] == {"cpu": "96", "memory": "1600Gi"}
    assert {"name": "shm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    assert c["readinessProbe"]["exec"]["command"] == ["atlctl", "status"]
    hc = head["spec"]["template"]["spec"]["containers"][0]
    assert hc["command"][:3] == ["headnode", "--job", "/etc/atl/job/job.json"]
    assert hc["ports"] == [{"name": "atl", "containerPort": 6380},
                           {"name": "dashboard", "containerPort": 8265}]
    assert hc["command"][-4:] == ["--dashboard-port", "8265", "--dashboard-token-file",
                                  "/etc/atl/tls/dashboard-token"]
    # Every render makes a new token unless --tls-dir holds one.
    _, again = render(EXAMPLE, "--image", "atl:1")
    other = [o for o in load(again).values() if o["kind"] == "Secret"][0]
    assert other["data"]["dashboard-token"] != secret["data"]["dashboard-token"]


def test_prometheus_scrapes_the_heads_metrics_through_a_service_monitor():
    # --prometheus: the head serves /metrics on its Service's `metrics` port
    # and a ServiceMonitor selects that Service. The core objects validate as
    # above; the ServiceMonitor is a CRD this validator has no schema for, so
    # what breaks a scrape in practice is checked: its selector matches the
    # head Service's labels in its namespace, its port is a port the Service
    # names, which reaches the port headnode serves /metrics on, on all
    # addresses.
    r, out = render(EXAMPLE, "--image", "atl:1", "--namespace", "train", "--prometheus")
    assert r.returncode == 0, r.stderr
    objs = list(load(out).values())
    core = [p for p in sorted(glob.glob(out + "/*.json")) if "servicemonitor" not in p]
    v = validate(core)
    assert v.returncode == 0 and v.stdout.count("passed") == 6, v.stdout + v.stderr
    (mon,) = [o for o in objs if o["kind"] == "ServiceMonitor"]
    assert mon["apiVersion"] == "monitoring.coreos.com/v1"
    services = [o for o in objs if o["kind"] == "Service"]
    chosen = [s for s in services
              if s["metadata"]["namespace"] in mon["spec"]["namespaceSelector"]["matchNames"]
              and mon["spec"]["selector"]["matchLabels"].items() <= s["metadata"]["labels"].items()]
    assert [s["metadata"]["name"] for s in chosen] == ["jo-example0000000000-head"]
    (endpoint,) = mon["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics" and endpoint["scheme"] == "http"
    (port,) = [p for p in chosen[0]["spec"]["ports"] if p["name"] == endpoint["port"]]
    head = [o for o in objs if o["kind"] == "Job" and o["metadata"]["name"].endswith("-head")][0]
    tmpl = head["spec"]["template"]
    assert chosen[0]["spec"]["selector"].items() <= tmpl["metadata"]["labels"].items()
    c = tmpl["spec"]["containers"][0]
    assert {"name": "metrics", "containerPort": port["targetPort"]} in c["ports"]
    cmd = c["command"]
    assert cmd[cmd.index("--metrics-port") + 1] == str(port["targetPort"])
    assert cmd[cmd.index("--metrics-bind") + 1] == "0.0.0.0"
    # Without the flag: no metrics port and no ServiceMonitor (its CRD may
    # not be installed).
    r, out = render(EXAMPLE, "--image", "atl:1")
    assert not [o for o in load(out).values() if o["kind"] == "ServiceMonitor"]


def test_the_validator_catches_a_wrong_manifest():
    # The check above can fail: strict validation refuses an unknown field.
    r, out = render(EXAMPLE, "--image", "atl:1")
    assert r.returncode == 0, r.stderr
    path = glob.glob(out + "/*-job-*-worker.json")[0]
    obj = json.load(open(path))
    obj["spec"]["template"]["spec"]["containers"][0]["comand"] = ["typo"]
    json.dump(obj, open(path, "w"))
    v = validate([path])
    assert v.returncode != 0, v.stdout


def test_given_credentials_are_used_and_unreadable_ones_refused():
    tls = made_folder("atl-k8s-tls-")
    for name in ("ca.pem", "cert.pem", "key.pem"):
        open(os.path.join(tls, name), "w").write(f"{name} content\n")
    r, out = render(EXAMPLE, "--image", "atl:1", "--tls-dir", tls)
    assert r.returncode == 0, r.stderr
    secret = [o for o in load(out).values() if o["kind"] == "Secret"][0]
    assert base64.b64decode(secret["data"]["key.pem"]) == b"key.pem content\n"
    # A token beside them is kept; a damaged one refused.
    open(os.path.join(tls, "dashboard-token"), "w").write("t" * 20 + "\n")
    r, out = render(EXAMPLE, "--image", "atl:1", "--tls-dir", tls)
    secret = [o for o in load(out).values() if o["kind"] == "Secret"][0]
    assert base64.b64decode(secret["data"]["dashboard-token"]) == b"t" * 20 + b"\n"
    open(os.path.join(tls, "dashboard-token"), "w").write("short\n")
    r, _ = render(EXAMPLE, "--image", "atl:1", "--tls-dir", tls)
    assert r.returncode == 2 and "dashboard-token" in r.stderr and r.stderr.count("\n") == 1
    os.remove(os.path.join(tls, "key.pem"))
    r, _ = render(EXAMPLE, "--image", "atl:1", "--tls-dir", tls)
    assert r.returncode == 2 and "key.pem" in r.stderr and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.parametrize("spec, says", [
    ("not json", "not valid JSON"),
    ("[1]", "a job spec is a JSON object"),
    ('{"workers": 2}', "'job_id' must be set"),
    ('{"job_id": "Jo_X"}', "'job_id' must be set"),
    ('{"job_id": "jo-x", "workers": -1}', "'workers'"),
    ('{"job_id": "jo-x", "workers": true}', "'workers'"),
    ('{"job_id": "jo-x", "spec": {"memory": "lots"}}', "spec.memory"),
    ('{"job_id": "jo-x", "spec": {"shm": [1]}}', "spec.shm"),
    ('{"job_id": "jo-x", "spec": 3}', "'spec' must be an object"),
])
def test_bad_specs_are_one_line_and_exit_2(spec, says):
    path = os.path.join(made_folder("atl-k8s-spec-"), "job.json")
    open(path, "w").write(spec)
    r, out = render(path, "--image", "atl:1")
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not glob.glob(out + "/*.json")  # nothing written


def test_bad_flags_are_refused():
    for args, says in ((["--namespace", "Bad_NS"], "--namespace"),
                       (["--image", "has space"], "--image")):
        argv = [EXAMPLE, "--image", "atl:1", *args]
        r, _ = render(*argv)
        assert r.returncode == 2 and says in r.stderr, r.stderr
    r, _ = render(os.path.join(ROOT, "no-such.json"), "--image", "atl:1")
    assert r.returncode == 2 and "cannot read" in r.stderr, r.stderr
