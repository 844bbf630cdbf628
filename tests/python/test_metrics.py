"""The head's /metrics against a live cluster: it parses as Prometheus text
(prometheus_client's own parser) and its numbers are those of status --json."""
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import atl
from conftest import Cluster


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def test_metrics_parse_and_match_the_status():
    c = Cluster(2, entrypoint="echo driver-line; sleep 600", extra=("--metrics-port", "0"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        assert c.wait_for("driver-line"), c.output()
        url = next(line.split()[1] for line in c.output().splitlines()
                   if line.startswith("metrics http://"))
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        atl.init(c.address, c.tls)
        status = atl.job_info()
        families = {f.name: f for f in text_string_to_metric_families(scrape(url))}
        samples = {f: [(s.name, s.labels, s.value) for s in fam.samples]
                   for f, fam in families.items()}

        states = {labels["state"]: value for _, labels, value in samples["atl_job_state"]}
        assert states[status["state"]] == 1 and sum(states.values()) == 1
        assert ("atl_job_restarts_total", {"atl_job": status["job_id"]},
                status["restarts"]) in samples["atl_job_restarts"]
        assert samples["atl_job_restart_budget"][0][2] == status["max_restarts"]
        assert samples["atl_job_attempt"][0][2] == status["attempt"]
        ranks = {labels["state"]: value for _, labels, value in samples["atl_ranks"]}
        for state in ("starting", "running", "exited"):
            assert ranks[state] == sum(r["state"] == state for r in status["ranks"]), state
        pods = {labels["state"]: value for _, labels, value in samples["atl_pods"]}
        assert pods["joined"] == sum(p["state"] == "joined" for p in status["pods"]) == 2
        ages = {labels["pod"]: value for _, labels, value
                in samples["atl_node_heartbeat_age_seconds"]}
        assert set(ages) == {p["name"] for p in status["pods"]}
        assert all(0 <= age < 60 for age in ages.values()), ages
        logs = {(name, labels["stream"]): value for name, labels, value
                in samples["atl_log_lines"]}
        assert logs[("atl_log_lines_total", "driver")] >= 1

        # Per-stream series are for what lives: a task's and a debug run's
        # leave when they end (folded into their kind's), a running one's stay.
        live = atl.run("echo task-live; sleep 60")
        for _ in range(2):
            assert atl.run("echo task-line").wait(timeout=60) == 0
        c.atlctl("run", "-f", "-r", "all", "echo run-line")
        for _ in range(100):
            if "task-live" in live.output():
                break
            time.sleep(0.1)
        lines = {labels["stream"]: value for name, labels, value
                 in [(s.name, s.labels, s.value)
                     for fam in text_string_to_metric_families(scrape(url))
                     for s in fam.samples] if name == "atl_log_lines_total"}
        assert lines.get("task-%d" % live.id) == 1, lines
        assert lines.get("ended-tasks") == 2, lines
        assert lines.get("ended-runs") == 2, lines  # one line from each of the 2 pods
        assert not [s for s in lines if s.startswith("run-")], lines
        assert [s for s in lines if s.startswith("task-")] == ["task-%d" % live.id], lines
        live.kill()

        # Anything but /metrics is a 404 naming the one path.
        try:
            urllib.request.urlopen(url.replace("/metrics", "/other"), timeout=10)
            raise AssertionError("expected a 404")
        except urllib.error.HTTPError as e:
            assert e.code == 404 and b"/metrics" in e.read()
    finally:
        atl.shutdown()
        c.stop()


def test_a_bad_metrics_port_is_refused():
    import subprocess
    from conftest import BIN
    import os
    for args, says in ((["--metrics-port", "70000"], "--metrics-port"),
                       (["--metrics-bind", "0.0.0.0"], "--metrics-bind needs --metrics-port")):
        r = subprocess.run([os.path.join(BIN, "headnode"), "--workers", "1", *args, "--",
                            "true"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, r.stderr
        assert says in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_the_grafana_dashboard_asks_only_for_what_the_head_serves():
    # deploy/grafana/atl-job.json: each panel's queries name families a
    # live spmd job's /metrics has (those that come only after a burn or a
    # check are the README's), by atl_job (never job), in a grid Grafana lays out.
    import json
    import os
    import re
    from conftest import ROOT
    board = json.load(open(os.path.join(ROOT, "deploy", "grafana", "atl-job.json")))
    assert isinstance(board["schemaVersion"], int) and board["uid"] == "atl-job"
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["job"]["definition"] == "label_values(atl_job_state, atl_job)"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)), ids
    wanted = set()
    for p in board["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t["refId"] and t["expr"], p["title"]
            assert not re.search(r"[{,]\s*job\s*=", t["expr"]), t["expr"]
            wanted |= set(re.findall(r"\batl_[a-z_]+\b", t["expr"])) - {"atl_job"}
    readme = open(os.path.join(ROOT, "README.md")).read()
    after_a_burn_or_check = {n for n in wanted
                             if n.startswith(("atl_burn_", "atl_check_")) and "`" + n in readme}
    c = Cluster(1, mode="spmd", nproc_per_node=2,
                entrypoint="while true; do echo step; sleep 0.2; done",
                extra=("--metrics-port", "0"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        url = next(line.split()[1] for line in c.output().splitlines()
                   if line.startswith("metrics http://"))
        deadline = time.time() + 60
        while True:
            served = {f.name for f in text_string_to_metric_families(scrape(url))}
            # prometheus_client drops a counter's _total from its family name.
            served |= {n + "_total" for n in served}
            missing = wanted - served - after_a_burn_or_check
            if not missing or time.time() > deadline:
                break
            time.sleep(0.5)
        assert not missing, (missing, sorted(served))
    finally:
        c.stop()
