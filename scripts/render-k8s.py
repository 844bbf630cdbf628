#!/usr/bin/env python3
"""Renders one atl job's Kubernetes manifests from its job spec (the JSON
`headnode --job` takes): the job file as a ConfigMap, the job's TLS
credentials as a Secret, the head as a Job behind a headless Service, the
workers as an Indexed Job whose pods are `<job-id>-worker-<i>` (the names
atlctl, taints and `delete` use), the downward API for pod and node names,
readiness through `atlctl status`, and the spec's cpus/gpus/memory/shm as
resource requests. Manifests are written as JSON (which is YAML), one file
per object, for `kubectl apply -f DIR`.

Usage: scripts/render-k8s.py JOB.json --image IMAGE [--namespace NS]
           [--tls-dir DIR] [--out DIR] [--prometheus]
  --tls-dir     the job's credentials (ca.pem, cert.pem, key.pem); default: made
                now by `headnode --make-tls` (headnode from build/bin or PATH)
  --prometheus  the head serves /metrics on port 9090 (its Service's `metrics`
                port) and a ServiceMonitor (the Prometheus Operator's) scrapes it
Exit 2 with one line naming what is wrong.
"""
import argparse
import base64
import json
import os
import re
import secrets
import shutil
import string
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ATL_PORT = 6380
DASHBOARD_PORT = 8265
METRICS_PORT = 9090
TOKEN = re.compile(r"^[!-~]{16,256}$")  # headnode's rule: printable ASCII, no space
# Kubernetes names: DNS-1123 labels (job ids are "jo-" + lowercase letters and digits).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")


def fail(message):
    print(f"render-k8s: {message}", file=sys.stderr)
    sys.exit(2)


def quantity(value, field):
    """A byte size of the spec ("64Gi", or a number of bytes) as a Kubernetes quantity."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        fail(f"{field}: expected a size such as 64Gi or a number of bytes, got {value!r}")
    text = str(value).strip()
    if text.endswith("iB"):  # the spec's "64GiB" is Kubernetes' "64Gi"
        text = text[:-1]
    if not QUANTITY.match(text):
        fail(f"{field}: {value!r} is not a size such as 64Gi")
    return text


def load_spec(path):
    try:
        with open(path) as f:
            spec = json.load(f)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path}: not valid JSON ({e.msg} at line {e.lineno})")
    if not isinstance(spec, dict):
        fail(f"{path}: a job spec is a JSON object")
    job_id = spec.get("job_id")
    if not isinstance(job_id, str) or not DNS_LABEL.match(job_id) or len(job_id) > 40:
        fail(f"{path}: field 'job_id' must be set: 1-40 lowercase letters, digits and '-' "
             "(it names the pods)")
    for field in ("workers", "spare_workers"):
        value = spec.get(field, 1 if field == "workers" else 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 100000:
            fail(f"{path}: field '{field}' must be a whole number between 0 and 100000")
    if not isinstance(spec.get("spec", {}), dict):
        fail(f"{path}: field 'spec' must be an object")
    return spec


def dashboard_token(tls_dir):
    """The dashboard's login token: --tls-dir's dashboard-token when it has
    one (re-rendering keeps a job's token), else 43 random characters."""
    path = os.path.join(tls_dir, "dashboard-token") if tls_dir else None
    if path and os.path.exists(path):
        try:
            token = open(path).readline().strip()
        except OSError as e:
            fail(f"--tls-dir: cannot read {path}: {e.strerror}")
        if not TOKEN.match(token):
            fail(f"--tls-dir: {path}: a dashboard token is 16 to 256 printable characters, no space")
        return token.encode() + b"\n"
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(43)).encode() + b"\n"


def credentials(args, job_id):
    if args.tls_dir:
        files = {}
        for name in ("ca.pem", "cert.pem", "key.pem"):
            try:
                with open(os.path.join(args.tls_dir, name), "rb") as f:
                    files[name] = f.read()
            except OSError as e:
                fail(f"--tls-dir: cannot read {os.path.join(args.tls_dir, name)}: {e.strerror}")
        files["dashboard-token"] = dashboard_token(args.tls_dir)
        return files
    headnode = os.path.join(ROOT, "build", "bin", "headnode")
    if not os.access(headnode, os.X_OK):
        headnode = shutil.which("headnode")
    if not headnode:
        fail("no --tls-dir and no headnode to make credentials with (build atl or give "
             "--tls-dir)")
    scratch = tempfile.mkdtemp(prefix="atl-k8s-tls-")
    try:
        made = subprocess.run([headnode, "--make-tls", os.path.join(scratch, "tls"), "--job-id",
                               job_id], capture_output=True, text=True)
        if made.returncode != 0:
            fail("headnode --make-tls: " + made.stderr.strip())
        args.tls_dir = os.path.join(scratch, "tls")
        return credentials(args, job_id)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def resources(spec):
    node = spec.get("spec", {})
    limits, requests = {}, {}
    if node.get("cpus"):
        requests["cpu"] = limits["cpu"] = str(node["cpus"])
    if node.get("memory"):
        requests["memory"] = limits["memory"] = quantity(node["memory"], "spec.memory")
    if node.get("gpus"):
        limits["nvidia.com/gpu"] = str(node["gpus"])  # GPUs: limits only, as the device plugin wants
    out = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def pod_common(spec, image, role, command, metrics=False):
    """The parts the head's and the workers' pods share."""
    job_id = spec["job_id"]
    node = spec.get("spec", {})
    volumes = [
        {"name": "job", "configMap": {"name": f"{job_id}-job"}},
        {"name": "tls", "secret": {"secretName": f"{job_id}-tls", "defaultMode": 0o400}},
        {"name": "state", "emptyDir": {}},
    ]
    mounts = [
        {"name": "job", "mountPath": "/etc/atl/job", "readOnly": True},
        {"name": "tls", "mountPath": "/etc/atl/tls", "readOnly": True},
        {"name": "state", "mountPath": "/var/lib/atl"},
    ]
    if node.get("shm"):
        volumes.append({"name": "shm", "emptyDir": {
            "medium": "Memory", "sizeLimit": quantity(node["shm"], "spec.shm")}})
        mounts.append({"name": "shm", "mountPath": "/dev/shm"})
    container = {
        "name": f"atl-{role}",
        "image": image,
        "command": command,
        "env": [
            {"name": "ATL_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "ATL_TLS_DIR", "value": "/etc/atl/tls"},
        ],
        "ports": ([{"name": "atl", "containerPort": ATL_PORT},
                   {"name": "dashboard", "containerPort": DASHBOARD_PORT}] +
                  ([{"name": "metrics", "containerPort": METRICS_PORT}] if metrics else [])
                  if role == "head" else []),
        "volumeMounts": mounts,
        # The node agent (and the head) write /run/atl/job.json: atlctl needs no flags.
        "readinessProbe": {"exec": {"command": ["atlctl", "status"]},
                           "initialDelaySeconds": 2, "periodSeconds": 10, "timeoutSeconds": 5},
        "resources": resources(spec),
    }
    if not container["ports"]:
        del container["ports"]
    return {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 30,
        "containers": [container],
        "volumes": volumes,
    }


def render(spec, image, namespace, tls_files, prometheus=False):
    job_id = spec["job_id"]
    head_host = f"{job_id}-head.{namespace}.svc"
    pods = spec.get("workers", 1) + spec.get("spare_workers", 0)
    labels = lambda role: {"app.kubernetes.io/name": "atl", "atl/job": job_id, "atl/role": role}
    meta = lambda name, role: {"name": name, "namespace": namespace, "labels": labels(role)}
    job_file = dict(spec)
    out = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(f"{job_id}-job", "config"),
         "data": {"job.json": json.dumps(job_file, indent=2) + "\n"}},
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
         "metadata": meta(f"{job_id}-tls", "config"),
         "data": {k: base64.b64encode(v).decode("ascii") for k, v in tls_files.items()}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta(f"{job_id}-head", "head"),
         "spec": {"clusterIP": "None", "selector": labels("head"),
                  "ports": [{"name": "atl", "port": ATL_PORT, "targetPort": ATL_PORT},
                            {"name": "dashboard", "port": DASHBOARD_PORT,
                             "targetPort": DASHBOARD_PORT}] +
                           ([{"name": "metrics", "port": METRICS_PORT,
                              "targetPort": METRICS_PORT}] if prometheus else [])}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta(f"{job_id}-worker", "worker"),
         "spec": {"clusterIP": "None", "selector": labels("worker")}},
    ]
    head_pod = pod_common(spec, image, "head", [
        "headnode", "--job", "/etc/atl/job/job.json", "--bind", "0.0.0.0", "--port",
        str(ATL_PORT), "--advertise", head_host, "--tls-dir", "/etc/atl/tls", "--state-dir",
        f"/var/lib/atl/{job_id}", "--dashboard-port", str(DASHBOARD_PORT),
        "--dashboard-token-file", "/etc/atl/tls/dashboard-token"] +
        (["--metrics-port", str(METRICS_PORT), "--metrics-bind", "0.0.0.0"] if prometheus else []),
        metrics=prometheus)
    out.append({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": meta(f"{job_id}-head", "head"),
        "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": labels("head")},
                                                 "spec": head_pod}}})
    worker_pod = pod_common(spec, image, "worker", [
        "workernode", "--head", f"{head_host}:{ATL_PORT}",
        "--name", f"{job_id}-worker-$(JOB_COMPLETION_INDEX)", "--node", "$(NODE_NAME)",
        "--tls-dir", "/etc/atl/tls", "--connect-timeout", "10m"])
    # $(JOB_COMPLETION_INDEX) expands only for a variable the container declares.
    worker_pod["containers"][0]["env"].insert(0, {
        "name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
    # Pods of an Indexed Job are named <job>-<index>-<random>, their hostname is
    # <job>-<index> = <job-id>-worker-<i> under the headless Service above.
    worker_pod["subdomain"] = f"{job_id}-worker"
    out.append({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": meta(f"{job_id}-worker", "worker"),
        "spec": {
            "completionMode": "Indexed", "completions": pods, "parallelism": pods,
            # A deleted or lost pod is recreated (atlctl delete, node loss), as
            # often as the job's restart budget could need it.
            "backoffLimit": max(6, (spec.get("max_restarts", 10) + 1) * max(pods, 1)),
            "template": {"metadata": {"labels": labels("worker")}, "spec": worker_pod}}})
    if prometheus:
        # The Prometheus Operator's scrape of the head's Service (its CRD must
        # be installed). The job is the target: Prometheus' own `job` label
        # names it, the series carry `atl_job` (never `job`, which a scrape
        # would rename `exported_job`).
        out.append({
            "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": meta(f"{job_id}-head", "head"),
            "spec": {"selector": {"matchLabels": labels("head")},
                     "namespaceSelector": {"matchNames": [namespace]},
                     "endpoints": [{"port": "metrics", "path": "/metrics", "scheme": "http",
                                    "interval": "15s"}]}})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("job")
    ap.add_argument("--image", required=True)
    ap.add_argument("--namespace", default="default")
    ap.add_argument("--tls-dir")
    ap.add_argument("--out", default="k8s-out")
    ap.add_argument("--prometheus", action="store_true")
    args = ap.parse_args()
    if not DNS_LABEL.match(args.namespace):
        fail(f"--namespace: {args.namespace!r} is not a Kubernetes name")
    if not args.image.strip() or any(c.isspace() for c in args.image):
        fail(f"--image: {args.image!r} is not an image reference")
    spec = load_spec(args.job)
    objects = render(spec, args.image, args.namespace, credentials(args, spec["job_id"]),
                     args.prometheus)
    os.makedirs(args.out, exist_ok=True)
    for i, obj in enumerate(objects):
        name = f"{i:02d}-{obj['kind'].lower()}-{obj['metadata']['name']}.json"
        with open(os.path.join(args.out, name), "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")
        print(os.path.join(args.out, name))


if __name__ == "__main__":
    main()
