"""The head's dashboard against a live spmd cluster (real headnode, workers
and ranks on 127.0.0.1, HTTPS with the job's certificate): what it refuses
without a session, that its API is `atlctl status --json`, /metrics behind
the token, log following over Server-Sent Events, atlctl dashboard-url, and
the pages in a real headless Chromium (Debian's chromium and chromium-driver,
python3-selenium), with a screenshot of each page kept under
build/test-artifacts/dashboard/ (not committed)."""
import atexit
import http.client
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.parse

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import BIN, ROOT, Cluster, host_pid

ARTIFACTS = os.environ.get("ATL_TEST_ARTIFACTS",
                           os.path.join(ROOT, "build", "test-artifacts", "dashboard"))
RANK_SCRIPT = 'i=0; while true; do i=$((i+1)); echo "rank $RANK line $i"; sleep 0.2; done'


class Http:
    """HTTPS to the dashboard, trusting exactly the job's CA (the job's
    certificate names no host, so the name is not checked)."""

    def __init__(self, url, ca):
        parts = urllib.parse.urlsplit(url)
        assert parts.scheme == "https", url
        self.host, self.port = parts.hostname, parts.port
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.check_hostname = False

    def request(self, method, path, headers=None, body=None, timeout=30):
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                           timeout=timeout)
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, r.headers, data

    def get(self, path, token=None, cookie=None):
        headers = {}
        if token:
            headers["Authorization"] = "Bearer " + token
        if cookie:
            headers["Cookie"] = cookie
        return self.request("GET", path, headers)


def _open_dashboard(c):
    """The cluster's dashboard: its URL, token and an HTTPS client trusting the job's CA."""
    c.url = c.line("dashboard ").split()[1]
    c.token = open(os.path.join(c.state, "dashboard-token")).read().strip()
    c.http = Http(c.url, os.path.join(c.tls, "ca.pem"))


@pytest.fixture(scope="module")
def spmd():
    c = Cluster(2, entrypoint=RANK_SCRIPT, mode="spmd", nproc_per_node=2,
                extra=("--dashboard-port", "0", "--linger", "120s"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        logs = [os.path.join(c.state, "logs", "rank-%d.log" % r) for r in range(4)]
        deadline = time.time() + 60
        while not all(os.path.exists(l) and os.path.getsize(l) > 0 for l in logs):
            assert time.time() < deadline, c.output()
            time.sleep(0.05)
        _open_dashboard(c)
        yield c
    finally:
        c.stop()


def test_token_file_is_private(spmd):
    path = os.path.join(spmd.state, "dashboard-token")
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert len(spmd.token) == 43 and spmd.token.isalnum()


def test_idle_connections_hold_no_thread_and_leave(spmd):
    # 1,000 idle TCP connections held all 256 HTTP threads: a real request
    # timed out. They now wait in the lobby until they speak, 5 s at most.
    import socket
    idle = [socket.create_connection((spmd.http.host, spmd.http.port)) for _ in range(1000)]
    try:
        started = time.time()
        status, _, _ = spmd.http.get("/api/status", token=spmd.token)
        assert status == 200
        # Generous for 2 shared cores; it was a timeout (30 s) before.
        assert time.time() - started < 10
        tasks = len(os.listdir("/proc/%d/task" % spmd.head.pid))
        assert tasks < 200, tasks
        # A stranger's connection is closed after its answer, not kept alive.
        _, headers, _ = spmd.http.get("/api/status")
        assert headers.get("Connection", "").lower() == "close"
        # The idle ones are closed by the head after their wait.
        deadline = time.time() + 30
        open_ones = len(idle)
        while open_ones and time.time() < deadline:
            time.sleep(0.5)
            open_ones = 0
            for s in idle:
                s.setblocking(False)
                try:
                    open_ones += s.recv(1) != b""
                except BlockingIOError:
                    open_ones += 1
                except OSError:
                    pass
        assert open_ones == 0, open_ones
    finally:
        for s in idle:
            s.close()


def test_everything_is_refused_without_a_session(spmd):
    h = spmd.http
    for path in ("/api/status", "/api/events", "/api/logs", "/api/logs/rank-0?tail=5",
                 "/api/logs/rank-0/follow", "/api/runs/1/figures", "/metrics", "/api/nope"):
        status, headers, body = h.get(path)
        assert status == 401, (path, status, body)
        assert "log in first" in json.loads(body)["error"], body
        status, _, body = h.get(path, token="x" * 43)
        assert status == 401 and "wrong dashboard token" in body.decode(), (path, body)
        status, _, body = h.get(path, cookie="atl_session=made-up")
        assert status == 401 and "no such session" in body.decode(), (path, body)
    for path in ("/", "/static/app.js", "/static/chart.min.js", "/nope"):
        status, headers, body = h.get(path)
        assert status == 303 and headers["Location"] == "/login", (path, status)
    # The login page itself, and a wrong token there: no session made.
    status, _, body = h.get("/login")
    assert status == 200 and b'name="token"' in body
    status, headers, body = h.request("POST", "/login", {
        "Content-Type": "application/x-www-form-urlencoded"}, "token=wrong")
    assert status == 401 and b"Wrong token." in body and "Set-Cookie" not in headers
    status, headers, _ = h.get("/login?token=" + spmd.token[:-1])
    assert status == 401 and "Set-Cookie" not in headers


def test_a_login_makes_a_session_and_logout_ends_it(spmd):
    h = spmd.http
    status, headers, _ = h.request("POST", "/login", {
        "Content-Type": "application/x-www-form-urlencoded"}, "token=" + spmd.token)
    assert status == 303 and headers["Location"] == "/"
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "Secure" in cookie and "SameSite=Lax" in cookie
    session = cookie.split(";")[0]
    status, _, body = h.get("/", cookie=session)
    assert status == 200 and b"/static/app.js" in body
    status, headers, _ = h.get("/static/app.js", cookie=session)
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    status, _, body = h.get("/static/chart.min.js", cookie=session)
    assert status == 200 and b"Chart" in body and len(body) > 100000
    status, headers, _ = h.request("POST", "/logout", {"Cookie": session})
    assert status == 303 and headers["Location"] == "/login"
    status, _, body = h.get("/api/status", cookie=session)
    assert status == 401 and b"no such session" in body


def without_ages(status):
    """The status less what changes by the second: heartbeat ages, the
    ranks' figures (a later test reads those) and goodput's running clock."""
    for key in ("elapsed_s", "productive_s", "ratio"):
        status["goodput"].pop(key)
    for p in status["pods"]:
        p.pop("heartbeat_age_ms", None)
    for r in status["ranks"]:
        r.pop("vitals", None)
    return status


def test_the_api_is_the_status_atlctl_prints(spmd):
    status, headers, body = spmd.http.get("/api/status", token=spmd.token)
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert headers["Cache-Control"] == "no-store"
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    api = without_ages(json.loads(body))
    cli = without_ages(json.loads(spmd.atlctl("status", "--json").stdout))
    assert api == cli
    assert [r["rank"] for r in api["ranks"]] == [0, 1, 2, 3]
    assert [r["stream"] for r in api["ranks"]] == ["rank-0", "rank-1", "rank-2", "rank-3"]
    _, _, body = spmd.http.get("/api/events", token=spmd.token)
    assert json.loads(body) == json.loads(spmd.atlctl("events", "--json").stdout)


def test_the_status_comes_in_pages_with_whole_counts(spmd):
    def get(query):
        status, _, body = spmd.http.get("/api/status?" + query, token=spmd.token)
        return status, body
    status, body = get("ranks=2&rank_offset=1&pods=1&pod_offset=1")
    assert status == 200, body
    s = json.loads(body)
    assert [r["rank"] for r in s["ranks"]] == [1, 2], s["ranks"]
    assert s["ranks_total"] == 4
    assert s["rank_counts"] == {"starting": 0, "running": 4, "exited": 0}, s["rank_counts"]
    assert [p["name"] for p in s["pods"]] == [spmd.job_id + "-worker-1"], s["pods"]
    assert s["pods_total"] == 2 and s["pod_counts"]["joined"] == 2, s
    # The summary the job view asks for: no lists, the same counts.
    summary = json.loads(get("ranks=0&pods=0")[1])
    assert summary["ranks"] == [] and summary["pods"] == []
    assert summary["rank_counts"] == s["rank_counts"]
    # Past the end: empty pages.
    assert json.loads(get("ranks=5&rank_offset=100")[1])["ranks"] == []
    # Bad paging is refused, naming the parameter.
    for query, name in (("ranks=-1", "ranks"), ("rank_offset=x", "rank_offset"),
                        ("pods=99999999999", "pods"), ("pod_offset=", "pod_offset")):
        status, body = get(query)
        assert status == 400 and name.encode() in body, (query, status, body)


def test_metrics_behind_the_token_match_the_status(spmd):
    status, headers, body = spmd.http.get("/metrics", token=spmd.token)
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    info = json.loads(spmd.atlctl("status", "--json").stdout)
    ranks = {s.labels["state"]: s.value for s in families["atl_ranks"].samples}
    assert ranks["running"] == sum(r["state"] == "running" for r in info["ranks"]) == 4
    states = {s.labels["state"]: s.value for s in families["atl_job_state"].samples}
    assert states[info["state"]] == 1


def read_events(response, enough, timeout=30):
    """Server-Sent Events from a response until enough(events): each a dict
    with its id, its event name and its data lines."""
    events, current = [], {"data": []}
    deadline = time.time() + timeout
    while time.time() < deadline and not enough(events):
        line = response.readline().decode()
        assert line, "the stream ended"
        line = line.rstrip("\n")
        if not line:
            if current["data"] or "id" in current:
                events.append(current)
            current = {"data": []}
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(": ")
            if field == "data":
                current["data"].append(value)
            else:
                current[field] = value
    assert enough(events), events
    return events


def test_logs_read_tail_and_follow(spmd):
    h, t = spmd.http, spmd.token
    _, _, body = h.get("/api/logs", token=t)
    streams = {l["stream"] for l in json.loads(body)}
    assert {"head", "pod-worker-0", "pod-worker-1", "rank-0", "rank-3"} <= streams, streams
    _, _, body = h.get("/api/logs/rank-2?tail=2", token=t)
    tail = json.loads(body)
    assert tail["text"].count("\n") == 2 and "rank 2 line" in tail["text"]
    _, _, body = h.get("/api/logs/rank-2?offset=0&max=1000000", token=t)
    assert json.loads(body)["text"].startswith("rank 2 line 1\n")
    for bad in ("/api/logs/rank-2?offset=-1", "/api/logs/rank-2?tail=x", "/api/logs/rank-2?max=1e3"):
        status, _, body = h.get(bad, token=t)
        assert status == 400 and "not a non-negative integer" in body.decode(), bad
    status, _, body = h.get("/api/logs/rank-99", token=t)
    assert status == 404 and b"no log named 'rank-99'" in body
    status, _, _ = h.get("/api/logs/..%2f..%2fetc%2fpasswd", token=t)
    assert status == 404

    # Follow from the tail's end: the lines come as they are written, in order.
    conn = http.client.HTTPSConnection(h.host, h.port, context=h.ctx, timeout=30)
    conn.request("GET", "/api/logs/rank-2/follow?offset=%d" % tail["next_offset"],
                 headers={"Authorization": "Bearer " + t})
    r = conn.getresponse()
    assert r.status == 200 and r.headers["Content-Type"] == "text/event-stream"
    events = read_events(r, lambda evs: sum(len(e["data"]) for e in evs) >= 5)
    conn.close()
    lines = [l for e in events for l in e["data"]]
    numbers = [int(l.split()[-1]) for l in lines]
    last = int(tail["text"].splitlines()[-1].split()[-1])
    assert numbers[:5] == list(range(last + 1, last + 6)), (tail, events)
    # Each event's id is the offset after it: a reconnect (Last-Event-ID) goes on there.
    resume = int(events[0]["id"])
    assert resume > tail["next_offset"]
    conn = http.client.HTTPSConnection(h.host, h.port, context=h.ctx, timeout=30)
    conn.request("GET", "/api/logs/rank-2/follow?offset=0",
                 headers={"Authorization": "Bearer " + t, "Last-Event-ID": str(resume)})
    again = read_events(conn.getresponse(), lambda evs: len(evs) >= 1)
    conn.close()
    assert int(again[0]["data"][0].split()[-1]) == int(events[0]["data"][-1].split()[-1]) + 1
    status, _, body = h.request("GET", "/api/logs/rank-2/follow", {
        "Authorization": "Bearer " + t, "Last-Event-ID": "x"})
    assert status == 400 and b"Last-Event-ID" in body


def test_dashboard_url_prints_a_login_link(spmd):
    out = spmd.atlctl("dashboard-url").stdout.strip()
    assert out == spmd.url + "/login?token=" + spmd.token
    assert spmd.atlctl("dashboard-url", "--no-token").stdout.strip() == spmd.url
    j = json.loads(spmd.atlctl("dashboard-url", "--json").stdout)
    assert j == {"url": spmd.url, "token": spmd.token}
    r = spmd.atlctl("dashboard-url", "--json", "--no-token", check=False)
    assert r.returncode == 2 and "exclude each other" in r.stderr
    # The link logs in.
    path = urllib.parse.urlsplit(out)
    status, headers, _ = spmd.http.get(path.path + "?" + path.query)
    assert status == 303 and headers["Set-Cookie"].startswith("atl_session=")
    # The head's stdout is no terminal here: the token stays out of its log.
    assert "\nlogin " not in "\n" + spmd.output()


def test_the_head_prints_its_login_link_when_asked():
    # A first visit in one step: `login https://...` on the head's stdout
    # (as when that is a terminal), the same link atlctl dashboard-url prints.
    c = Cluster(1, mode="spmd", extra=("--dashboard-port", "0", "--print-login-link"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        _open_dashboard(c)
        link = c.line("login ").split()[1]
        assert link == c.url + "/login?token=" + c.token, link
        assert c.atlctl("dashboard-url").stdout.strip() == link
        path = urllib.parse.urlsplit(link)
        status, headers, _ = c.http.get(path.path + "?" + path.query)
        assert status == 303 and headers["Set-Cookie"].startswith("atl_session=")
    finally:
        c.stop()


def run_head(*args):
    return subprocess.run([os.path.join(BIN, "headnode"), "--workers", "1", "--port", "0",
                           "--insecure", *args, "--", "true"],
                          capture_output=True, text=True, timeout=60)


def test_dashboard_flags_are_checked(tmp_path):
    for value in ("99999", "-1", "x", "80x", ""):
        r = run_head("--state-dir", str(tmp_path / "a"), "--dashboard-port", value)
        assert r.returncode == 2, (value, r.stderr)
        assert "--dashboard-port: '%s' is not a port (0 to 65535) or 'off'" % value in r.stderr
    r = run_head("--state-dir", str(tmp_path / "b"), "--dashboard-port", "off",
                 "--dashboard-bind", "0.0.0.0")
    assert r.returncode == 2 and "--dashboard-bind needs the dashboard on" in r.stderr
    short = tmp_path / "short-token"
    short.write_text("abc\n")
    r = run_head("--state-dir", str(tmp_path / "c"), "--dashboard-token-file", str(short))
    assert r.returncode == 2 and "--dashboard-token-file: " in r.stderr
    assert "too short" in r.stderr
    r = run_head("--state-dir", str(tmp_path / "d"), "--dashboard-token-file",
                 str(tmp_path / "missing"))
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_a_given_port_that_is_taken_fails_and_off_means_none(spmd, tmp_path):
    port = urllib.parse.urlsplit(spmd.url).port
    r = run_head("--state-dir", str(tmp_path / "a"), "--dashboard-port", str(port))
    assert r.returncode == 1 and "--dashboard-port: cannot listen on" in r.stderr, r.stderr
    c = Cluster(1, mode="spmd", extra=("--dashboard-port", "off"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        assert "dashboard " not in c.output()
        r = c.atlctl("dashboard-url", check=False)
        assert r.returncode == 1 and "serves no dashboard" in r.stderr, r.stderr
        assert not os.path.exists(os.path.join(c.state, "dashboard-token"))
    finally:
        c.stop()


# --- the pages in a real browser ---------------------------------------------------

def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000"):
        opts.add_argument(arg)
    opts.set_capability("acceptInsecureCerts", True)  # the job's own CA
    opts.binary_location = shutil.which("chromium")
    # Chromium's temp folders (its singleton socket's, which it leaves even
    # after quit()) in one of the test's, removed when the tests end.
    folder = tempfile.mkdtemp(prefix="atl-chromium-")
    atexit.register(shutil.rmtree, folder, True)
    service = Service(shutil.which("chromedriver"), env=dict(os.environ, TMPDIR=folder))
    return webdriver.Chrome(service=service, options=opts)


def browser_login(d, c):
    """Logs browser `d` in to cluster `c`'s dashboard with its token."""
    from selenium.webdriver.common.by import By
    d.get(c.url + "/login")
    d.find_element(By.ID, "token").send_keys(c.token)
    d.find_element(By.ID, "login").click()
    # The form's redirect lands first: a navigation started before it ends
    # would be overtaken by it (seen under load: a #terminal/... page left
    # at "/").
    wait(d, lambda d: not d.current_url.endswith("/login") and d.find_elements(By.ID, "job-id"))


def session_cookie(c):
    """A fresh session on cluster `c`'s dashboard: its Cookie header."""
    status, headers, _ = c.http.request(
        "POST", "/login", {"Content-Type": "application/x-www-form-urlencoded"},
        "token=" + c.token)
    assert status == 303, status
    return headers["Set-Cookie"].split(";")[0]


def wait(driver, what, timeout=30):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            got = what(driver)
            if got:
                return got
        except Exception as e:  # the page is still being drawn
            last = e
        time.sleep(0.1)
    raise AssertionError("timed out waiting in the browser (%s) at %s" % (last, driver.current_url))


needs_chromium = pytest.mark.skipif(
    not (shutil.which("chromium") and shutil.which("chromedriver")),
    reason="chromium and chromium-driver are not installed (scripts/setup.sh --tests)")


@needs_chromium
def test_the_hang_watch_and_a_diagnosis_from_the_api_and_in_chromium(spmd):
    # The watch's state and each rank's progress age: the JSON and /metrics.
    status, _, body = spmd.http.get("/api/progress", token=spmd.token)
    assert status == 200, body
    progress = json.loads(body)
    assert progress["watching"] and not progress["suspect"], progress
    assert progress["timeout_ms"] == 300000, progress
    assert len(progress["progress_age_ms"]) == 4, progress
    assert all(0 <= a < 300000 for a in progress["progress_age_ms"]), progress
    _, _, body = spmd.http.get("/metrics", token=spmd.token)
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert [s.value for s in families["atl_job_suspect"].samples] == [0]
    # Goodput: the job's time spent training so far, a fraction.
    ratio = [s.value for s in families["atl_job_goodput_ratio"].samples]
    assert len(ratio) == 1 and 0 <= ratio[0] <= 1, ratio
    assert [s.value for s in families["atl_job_faults"].samples] == [0]  # a counter: _total
    ages = families["atl_rank_progress_age_seconds"].samples
    assert sorted(s.labels["rank"] for s in ages) == ["0", "1", "2", "3"], ages
    # A diagnosis: bad ranks are named, some ranks are only those.
    status, _, body = spmd.http.get("/api/diagnose?ranks=9", token=spmd.token)
    assert status == 400 and b"-r: " in body, body
    status, _, body = spmd.http.get("/api/diagnose?ranks=0-1", token=spmd.token)
    assert status == 200, body
    d = json.loads(body)
    assert [r["rank"] for r in d["ranks"]] == [0, 1], d
    assert sum(len(g["ranks"]) for g in d["groups"]) + len(d["unknown"]) == 2, d
    # The page: the cards, then a diagnosis of two ranks on a click.
    from selenium.webdriver.common.by import By
    os.makedirs(ARTIFACTS, exist_ok=True)
    d = browser()
    try:
        browser_login(d, spmd)
        wait(d, lambda d: d.find_element(By.ID, "card-state").text == "command (running)")
        goodput = d.find_element(By.ID, "card-goodput").text
        assert re.fullmatch(r"\d+\.\d %|—", goodput), goodput
        d.get(spmd.url + "/#hang")
        wait(d, lambda d: d.find_element(By.ID, "card-suspect").text == "no")
        assert d.find_element(By.ID, "card-watch").text == "on"
        assert len(d.find_elements(By.CSS_SELECTOR, "#progress tbody tr")) == 4
        box = d.find_element(By.ID, "diagnose-ranks")
        box.clear()
        box.send_keys("0-1")
        d.find_element(By.ID, "diagnose").click()
        rows = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#diagnosis-ranks tbody tr"),
                    timeout=60)
        assert [r.text.split()[0] for r in rows] == ["0", "1"], [r.text for r in rows]
        assert d.find_element(By.ID, "outliers").text
        d.save_screenshot(os.path.join(ARTIFACTS, "hang.png"))
    finally:
        d.quit()


def test_a_stopped_rank_is_marked_on_the_ranks_page_and_in_metrics(spmd):
    # Every rank prints 5 lines/s; rank 3's own process SIGSTOPped is marked
    # stopped as soon as its pod's agent samples it (it was marked silent
    # only after 15 s, and never in a job whose ranks were all quiet), on
    # the page and in /metrics.
    from selenium.webdriver.common.by import By

    def status():
        return json.loads(spmd.atlctl("status", "--json").stdout)

    deadline = time.time() + 60
    while time.time() < deadline:
        ranks = status()["ranks"]
        if all(r.get("vitals", {}).get("lines_per_s", 0) > 0 for r in ranks):
            break
        time.sleep(0.5)
    rank3 = [r for r in status()["ranks"] if r["rank"] == 3][0]
    assert rank3["vitals"]["user_pid"] != rank3["pid"], rank3  # the user's process, not atl's guard
    pid = host_pid(rank3["pod"], rank3["vitals"]["user_pid"])  # the pod's number: the host's
    os.kill(pid, signal.SIGSTOP)
    stopped_at = time.time()
    d = None
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            marks = {r["rank"]: r["vitals"]["mark"] for r in status()["ranks"] if "vitals" in r}
            if marks.get(3) == "stopped":
                break
            time.sleep(0.2)
        print("rank 3 marked stopped %.1f s after SIGSTOP" % (time.time() - stopped_at))
        assert marks == {0: "", 1: "", 2: "", 3: "stopped"}, marks
        _, _, body = spmd.http.get("/metrics", token=spmd.token)
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        marked = [(s.labels["rank"], s.labels["mark"]) for s in families["atl_rank_marked"].samples]
        assert marked == [("3", "stopped")], marked
        assert len(families["atl_rank_lines_per_second"].samples) == 4
        d = browser()
        d.get(spmd.url + "/login?token=" + spmd.token + "&next=/%23ranks")
        note = wait(d, lambda d: d.find_elements(By.ID, "ranks-marked"))
        assert note[0].text == "rank 3 is stopped", note[0].text
        rows = d.find_elements(By.CSS_SELECTOR, "#ranks tbody tr")
        assert [("stopped" in r.text) for r in rows] == [False, False, False, True]
        os.makedirs(ARTIFACTS, exist_ok=True)
        d.save_screenshot(os.path.join(ARTIFACTS, "ranks-marked.png"))
    finally:
        os.kill(pid, signal.SIGCONT)
        if d:
            d.quit()


def test_pages_in_chromium(spmd):
    from selenium.webdriver.common.by import By
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = lambda d, name: d.save_screenshot(os.path.join(ARTIFACTS, name + ".png"))
    d = browser()
    try:
        # Without a session: the page sends the browser to the login, the API refuses.
        d.get(spmd.url + "/#ranks")
        wait(d, lambda d: urllib.parse.urlsplit(d.current_url).path == "/login")
        d.get(spmd.url + "/api/status")
        assert "log in first" in d.find_element(By.TAG_NAME, "body").text
        d.get(spmd.url + "/login")
        d.find_element(By.ID, "token").send_keys("not-the-token")
        d.find_element(By.ID, "login").click()
        assert "Wrong token." in wait(d, lambda d: d.find_element(By.ID, "login-error").text)
        shot(d, "login-refused")

        d.find_element(By.ID, "token").send_keys(spmd.token)
        d.find_element(By.ID, "login").click()
        wait(d, lambda d: d.find_element(By.ID, "card-state").text == "command (running)")
        assert d.find_element(By.ID, "job-id").text == spmd.job_id
        shot(d, "job")

        d.get(spmd.url + "/#pods")
        rows = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#pods tbody tr"))
        assert len(rows) == 2 and "jo-py" in rows[0].text
        shot(d, "pods")

        d.get(spmd.url + "/#ranks")
        rows = wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#ranks tbody tr")) == 4
                    and d.find_elements(By.CSS_SELECTOR, "#ranks tbody tr"))
        assert all("running" in r.text for r in rows), [r.text for r in rows]
        # Each rank's figures over its last minutes (a point every 2 s), as
        # sparklines beside its figures: from the same samples as the table.
        status, _, body = spmd.http.get("/api/status?ranks=4&trend=1", token=spmd.token)
        assert status == 200, body
        deadline = time.time() + 60
        while True:
            ranks = json.loads(spmd.http.get("/api/status?ranks=4&trend=1",
                                             token=spmd.token)[2])["ranks"]
            if all(len(r.get("trend", {}).get("lines_per_s", [])) >= 3 for r in ranks):
                break
            assert time.time() < deadline, ranks
            time.sleep(0.5)
        for r in ranks:
            t = r["trend"]
            assert len({len(v) for v in t.values()}) == 1, t  # a value of each per point
            assert t["ago_ms"] == sorted(t["ago_ms"], reverse=True), t  # oldest first
            assert max(t["lines_per_s"]) > 0 and max(t["rss_bytes"]) > 0, t
        plain = json.loads(spmd.http.get("/api/status?ranks=4", token=spmd.token)[2])["ranks"]
        assert not any("trend" in r for r in plain), "only asked for"
        d.refresh()
        sparks = wait(d, lambda d: (lambda n: n if len(n) == 4 and all(x >= 3 for x in n) else None)(
            d.execute_script("return [...document.querySelectorAll('#ranks tbody tr')].map(tr => "
                             "{const l = tr.querySelector('svg.spark-lines_per_s polyline');"
                             " return l ? l.getAttribute('points').split(' ').length : 0})")),
                      timeout=30)
        assert len(d.find_elements(By.CSS_SELECTOR, "#ranks svg.spark-cpu_percent")) == 4
        # The time since each rank's progress as the hang watch counts it,
        # with the silence the watch allows drawn across (a dashed line).
        watch = json.loads(spmd.http.get("/api/status?ranks=4&trend=1",
                                         token=spmd.token)[2])["hang_watch"]
        assert 0 < watch["idle_timeout_ms"] <= watch["timeout_ms"] == 300000, watch
        ages = [r["trend"]["progress_age_ms"] for r in ranks]
        assert all(len([a for a in x if a is not None]) >= 2 for x in ages), ages
        assert all(0 <= a < watch["idle_timeout_ms"] for x in ages for a in x if a is not None)
        limits = d.find_elements(By.CSS_SELECTOR, "#ranks svg.spark-progress_age_ms line.limit")
        assert len(limits) == 4, d.find_element(By.ID, "ranks").text
        assert "suspect after" in d.find_element(
            By.CSS_SELECTOR, "#ranks svg.spark-progress_age_ms title").get_attribute("textContent")
        assert "Progress" in d.find_element(By.CSS_SELECTOR, "#ranks thead").text
        assert "lines/s over the last" in d.find_element(
            By.CSS_SELECTOR, "#ranks svg.spark-lines_per_s title").get_attribute("textContent")
        shot(d, "ranks")

        # Follow rank 1's log: new lines appear without a reload.
        d.get(spmd.url + "/#logs/rank-1")
        wait(d, lambda d: "following rank-1" in d.find_element(By.ID, "log-status").text)
        first = wait(d, lambda d: d.find_element(By.ID, "log").text)
        last = int(first.splitlines()[-1].split()[-1])
        wait(d, lambda d: int(d.find_element(By.ID, "log").text.splitlines()[-1].split()[-1])
             >= last + 3)
        shot(d, "logs")

        # A burn from atlctl; its chart on the burn page.
        assert "Stop job task success." in spmd.atlctl("stop").stdout
        burn = spmd.atlctl("burn", "-t", "global", "-d", "3s")
        assert "Check finished." in burn.stdout, burn.stdout
        # The charts' figures come structured from atl-burn through the
        # supervisor: one per round line the burn printed, never parsed back.
        rounds = sum(open(os.path.join(spmd.state, "logs", f)).read().count("AllReduce Perf")
                     for f in os.listdir(os.path.join(spmd.state, "logs"))
                     if f.startswith("run-1-rank-"))
        assert rounds >= 1
        status, _, body = spmd.http.get("/api/runs/1/figures", token=spmd.token)
        assert status == 200, body
        figures = json.loads(body)
        assert figures["run"] == 1 and figures["done"], figures
        assert figures["figures_dropped"] == 0 and not figures["figures_released"], figures
        busbw = [f for f in figures["figures"] if f["metric"] == "allreduce_busbw_gbps"]
        assert len(busbw) == rounds, figures
        assert all(f["round"] >= 1 and f["size"] and f["value"] >= 0 for f in busbw), busbw
        status, _, body = spmd.http.get("/api/runs/9/figures", token=spmd.token)
        assert status == 404 and b"there is no run 9" in body, body
        d.get(spmd.url + "/#burn")
        points = wait(d, lambda d: d.execute_script(
            "const c = Chart.getChart('chart-allreduce');"
            "return c && c.data.datasets.length && c.data.datasets[0].data.length;"))
        assert points >= 1
        sizes = d.execute_script(
            "return Chart.getChart('chart-allreduce').data.datasets.map(s => s.label);")
        assert any(s.startswith("8M") for s in sizes), sizes
        # Against the message size as nccl-tests users read it: a log x axis
        # in bytes, sizes in order; the figures table's sizes sorted as
        # numbers (8M before 16M) and its metrics named for people.
        by_size = d.execute_script(
            "const c = Chart.getChart('chart-busbw-size');"
            "return c && [c.options.scales.x.type, c.data.datasets[0].data.map(p => p.x)];")
        assert by_size[0] == "logarithmic", by_size
        assert by_size[1] == sorted(by_size[1]) and 8 * 2 ** 20 in by_size[1], by_size
        rows = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#figures tbody tr")]
        assert any("AllReduce bus bandwidth (GB/s)" in r for r in rows), rows
        assert not any("allreduce_busbw_gbps" in r for r in rows), rows
        table_sizes = [r.find_elements(By.TAG_NAME, "td")[3].text
                       for r in d.find_elements(By.CSS_SELECTOR, "#figures tbody tr")]
        numeric = [t for t in table_sizes if t]
        as_bytes = [int(t[:-1]) * {"K": 2**10, "M": 2**20, "G": 2**30}[t[-1]] for t in numeric]
        assert as_bytes == sorted(as_bytes) or len(set(numeric)) <= 1, table_sizes
        # The page redraws until the run is done.
        wait(d, lambda d: any(h.text == "Run 1" for h in d.find_elements(By.TAG_NAME, "h2")))
        wait(d, lambda d: d.execute_script("return !!Chart.getChart('chart-allreduce');"))
        shot(d, "burn")

        d.get(spmd.url + "/#runs/1")
        out = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "pre[data-stream]"))
        assert any("AllReduce Perf" in p.text for p in out)
        shot(d, "runs")

        # Log out: the session is gone for the API too.
        d.find_element(By.CSS_SELECTOR, "form.logout button").click()
        wait(d, lambda d: urllib.parse.urlsplit(d.current_url).path == "/login")
        d.get(spmd.url + "/api/status")
        assert "no such session" in d.find_element(By.TAG_NAME, "body").text or \
            "log in first" in d.find_element(By.TAG_NAME, "body").text
    finally:
        d.quit()


def test_debug_runs_come_in_pages_counted_from_the_newest(spmd):
    # A job keeps up to --history runs: the dashboard asks for the newest
    # page only (and for none on the views that list no runs).
    def get(query):
        status, _, body = spmd.http.get("/api/status?" + query, token=spmd.token)
        assert status == 200, body
        return json.loads(body)
    for word in ("first", "second"):
        spmd.atlctl("stop")
        assert word in spmd.atlctl("run", "-r", "0", "echo", word).stdout
    total = get("ranks=0&pods=0")["runs_total"]
    assert total >= 2
    assert [r["run"] for r in get("runs=2")["runs"]] == [total - 1, total]
    assert [r["run"] for r in get("runs=1&run_offset=1")["runs"]] == [total - 1]
    assert [r["command"] for r in get("runs=1")["runs"]] == ["echo second"]
    nothing = get("runs=0&ranks=0&pods=0")
    assert nothing["runs"] == [] and nothing["runs_total"] == total
    assert get("runs=5&run_offset=%d" % total)["runs"] == []
    assert len(get("pods=0")["runs"]) == total  # without runs=: all of them, as atlctl prints
    for query, name in (("runs=-1", "runs"), ("run_offset=x", "run_offset")):
        status, _, body = spmd.http.get("/api/status?" + query, token=spmd.token)
        assert status == 400 and name.encode() in body, (query, status, body)


@needs_chromium
def test_a_big_job_lists_its_ranks_a_page_at_a_time_in_chromium():
    """70 simulated pods x 8 ranks (workernode --simulate, in-process ranks):
    the ranks view shows 500 rows and pages on to the other 60."""
    from selenium.webdriver.common.by import By
    c = Cluster(70, entrypoint="sleep 100000", mode="spmd", nproc_per_node=8, local_workers=0,
                extra=("--dashboard-port", "0"))
    sim = None
    d = None
    try:
        sim = subprocess.Popen(
            [os.path.join(BIN, "workernode"), "--head", c.address, "--name",
             c.job_id + "-worker-0", "--simulate", "70", "--fake-ranks", "--tls-dir", c.tls],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
        assert c.wait_for("initializing -> command"), c.output()
        url = c.line("dashboard ").split()[1]
        token = open(os.path.join(c.state, "dashboard-token")).read().strip()
        d = browser()
        d.get(url + "/login?token=" + token)
        d.get(url + "/#ranks")
        pager = lambda: d.find_element(By.ID, "ranks-pager").text
        rows = lambda: d.find_elements(By.CSS_SELECTOR, "#ranks tbody tr")
        wait(d, lambda d: len(rows()) == 500 and "560 running" in d.find_element(
            By.TAG_NAME, "h2").text)
        assert pager().startswith("1–500 of 560"), pager()
        assert rows()[0].text.split()[0] == "0"
        d.find_element(By.LINK_TEXT, "next →").click()
        wait(d, lambda d: len(rows()) == 60)
        assert pager().startswith("501–560 of 560"), pager()
        assert rows()[0].text.split()[0] == "500"
        os.makedirs(ARTIFACTS, exist_ok=True)
        d.save_screenshot(os.path.join(ARTIFACTS, "ranks-page-2.png"))
        d.get(url + "/#pods")
        wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#pods tbody tr")) == 70)
        assert not d.find_elements(By.ID, "pods-pager")  # one page
    finally:
        if d:
            d.quit()
        if sim:
            os.killpg(sim.pid, signal.SIGKILL)
            sim.wait()
        c.stop()


def test_a_browser_trusting_the_ca_accepts_the_certificate(spmd):
    # The job's certificate had no subjectAltName: browsers refused it even
    # with ca.pem imported. Full hostname checking, as a browser does.
    ctx = ssl.create_default_context(cafile=os.path.join(spmd.tls, "ca.pem"))
    assert ctx.check_hostname
    conn = http.client.HTTPSConnection(spmd.http.host, spmd.http.port, context=ctx, timeout=30)
    conn.request("GET", "/login")
    assert conn.getresponse().status == 200
    conn.close()



ATTEMPTS_SCRIPT = (
    'if [ "$ATL_RESTART_COUNT" = 0 ]; then for i in 1 2 3 4 5; do echo "first line $i"; done; '
    'echo "first needle in the hay"; sleep 1; echo "first last words"; exit 3; fi; '
    'i=0; while true; do i=$((i+1)); echo "second line $i"; sleep 0.2; done')


@pytest.fixture(scope="module")
def restarted():
    """A job in its second attempt: attempt 1 printed and failed."""
    c = Cluster(1, entrypoint=ATTEMPTS_SCRIPT, mode="spmd",
                extra=("--dashboard-port", "0", "--restart-on-failure", "--max-restarts", "1",
                       "--linger", "120s"))
    try:
        assert c.wait_for("[rank 0] second line 2", timeout=120), c.output()
        _open_dashboard(c)
        yield c
    finally:
        c.stop()


def test_an_earlier_attempts_log_by_time_with_times_and_as_a_download(restarted):
    h, t = restarted.http, restarted.token
    _, _, body = h.get("/api/logs?attempt=1", token=t)
    assert "rank-0" in [l["stream"] for l in json.loads(body)]
    _, _, body = h.get("/api/logs/rank-0?attempt=1&offset=0", token=t)
    first = json.loads(body)["text"]
    assert first.startswith("first line 1\n") and first.endswith("first last words\n"), first
    assert "second" not in first
    _, _, body = h.get("/api/logs/rank-0?attempt=1&tail=2&stamped=1", token=t)
    stamped = json.loads(body)["text"].splitlines()
    assert len(stamped) == 2, stamped
    for line in stamped:
        stamp, _, rest = line.partition(" ")
        assert time.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ") and rest.startswith("first"), line
    # since: from a time on (the future: nothing; the epoch: everything).
    future = int(time.time() * 1000) + 60000
    _, _, body = h.get("/api/logs/rank-0?attempt=1&since=%d" % future, token=t)
    assert json.loads(body)["text"] == ""
    _, _, body = h.get("/api/logs/rank-0?attempt=1&since=1", token=t)
    assert json.loads(body)["text"] == first
    # Refused: both starts, a bad attempt, an attempt without that log.
    for bad in ("/api/logs/rank-0?since=1&offset=0", "/api/logs/rank-0?attempt=x",
                "/api/logs?attempt=-1"):
        status, _, _ = h.get(bad, token=t)
        assert status == 400, bad
    status, _, body = h.get("/api/logs/rank-0?attempt=9", token=t)
    assert status == 404 and b"in attempt 9" in body, body
    # The whole file as a download, named for its attempt.
    status, headers, body = h.get("/api/logs/rank-0/download?attempt=1", token=t)
    assert status == 200
    assert headers["Content-Disposition"] == 'attachment; filename="attempt-1-rank-0.log"'
    assert body.decode() == first
    status, _, _ = h.get("/api/logs/rank-0/download?attempt=1")
    assert status == 401


@needs_chromium
def test_the_log_view_shows_the_last_minute_of_attempt_one_searched(restarted):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    os.makedirs(ARTIFACTS, exist_ok=True)
    d = browser()
    try:
        d.get(restarted.url + "/login?token=" + restarted.token + "&next=/%23logs/rank-0")
        wait(d, lambda d: "following rank-0" in d.find_element(By.ID, "log-status").text)
        assert "second line" in d.find_element(By.ID, "log").text
        Select(d.find_element(By.ID, "log-attempt")).select_by_value("1")
        wait(d, lambda d: "attempt 1 (ended)" in d.find_element(By.ID, "log-status").text)
        Select(d.find_element(By.ID, "log-since")).select_by_value("60000")
        # Each choice reads the log again and draws the view anew.
        wait(d, lambda d: d.find_element(By.ID, "log-since").get_attribute("value") == "60000"
             and "attempt 1 (ended)" in d.find_element(By.ID, "log-status").text)
        wait(d, lambda d: d.find_element(By.ID, "log-times").click() or True)
        lines = wait(d, lambda d: [l for l in d.find_element(By.ID, "log").text.splitlines()
                                   if "Z first" in l])
        assert len(lines) == 7 and "second" not in d.find_element(By.ID, "log").text, lines
        wait(d, lambda d: d.find_element(By.ID, "log-search").send_keys("needle") or True)
        kept = wait(d, lambda d: d.find_element(By.ID, "log-status").get_attribute(
            "data-matches") == "1" and d.find_element(By.ID, "log").text)
        assert kept.endswith("Z first needle in the hay"), kept
        href = d.find_element(By.ID, "log-download").get_attribute("href")
        assert href.endswith("/api/logs/rank-0/download?attempt=1"), href
        d.save_screenshot(os.path.join(ARTIFACTS, "logs-attempt-1.png"))
    finally:
        d.quit()


@needs_chromium
def test_the_job_page_lists_every_attempt_with_how_it_ended():
    # Six attempts, ended by a deleted pod, atlctl stop + recover (twice),
    # another delete, a rank killed (--restart-on-failure) and, the budget
    # spent, the job's failure: each listed with its times and why (the
    # budget's lines named only the three faults).
    from selenium.webdriver.common.by import By
    c = Cluster(1, mode="spmd", extra=("--dashboard-port", "0", "--restart-on-failure",
                                       "--max-restarts", "3", "--linger", "120s"))
    d = None
    try:
        assert c.wait_for("initializing -> command"), c.output()
        _open_dashboard(c)

        def status():
            return json.loads(c.atlctl("status", "--json").stdout)

        def running(attempt):
            deadline = time.time() + 90
            while time.time() < deadline:
                s = status()
                if (s["state"] == "command" and s["attempt"] == attempt and
                        s["rank_counts"]["running"] == 1):
                    return s
                time.sleep(0.2)
            raise AssertionError("attempt %d not running:\n%s" % (attempt, c.output()))

        def recover(attempt):
            c.atlctl("stop")
            c.atlctl("recover")
            running(attempt)

        running(1)
        c.atlctl("delete", "-p", "all")
        running(2)
        recover(3)
        recover(4)
        c.atlctl("delete", "-p", "all")
        s = running(5)

        def kill_rank(s):
            # The user's own process (sampled with the heartbeats), not atl's
            # guard; a sample of a moment before may name one that is gone.
            deadline = time.time() + 30
            while True:
                rank = s["ranks"][0]
                if "vitals" in rank:
                    try:
                        os.kill(host_pid(rank["pod"], rank["vitals"]["user_pid"]), signal.SIGKILL)
                        return
                    except AssertionError:
                        if time.time() > deadline:
                            raise
                assert time.time() < deadline, s
                time.sleep(0.2)
                s = status()
        kill_rank(s)
        s = running(6)
        kill_rank(s)
        assert c.wait_for("Job status:  failed", 60), c.output()
        s = status()
        hows = [(a["attempt"], a["how"]) for a in s["attempt_history"]]
        assert hows == [(1, "fault"), (2, "stopped and recovered"), (3, "stopped and recovered"),
                        (4, "fault"), (5, "fault"), (6, "failed")], hows
        assert all(a["started_ms"] <= a["ended_ms"] for a in s["attempt_history"]), s
        # The faults' costs name the attempts they ended (a recover is a new
        # attempt: they said 1, 2, 3).
        assert [f["attempt"] for f in s["goodput"]["recent_faults"]] == [1, 4, 5], s["goodput"]
        assert s["entrypoint"] == "exec sleep 600"
        assert s["submitted_ms"] <= s["started_ms"] <= s["ended_ms"], s
        d = browser()
        d.get(c.url + "/login?token=" + c.token)
        rows = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#attempt-history tbody tr"))
        assert [r.find_elements(By.TAG_NAME, "td")[4].text for r in rows] == [
            "failed", "fault", "fault", "stopped and recovered", "stopped and recovered",
            "fault"], [r.text for r in rows]
        assert d.find_element(By.ID, "entrypoint").text == "exec sleep 600"
        assert "took " in d.find_element(By.ID, "job-times").text
        # The same six on one time line, in order, each coloured by how it
        # ended, each bar after the one before (the gaps: the restarts).
        bars = d.execute_script(
            "return [...document.querySelectorAll('#attempt-timeline .seg')].map(b => "
            "[b.textContent, b.className, parseFloat(b.style.left), parseFloat(b.style.width)])")
        assert [(b[0], b[1]) for b in bars] == [
            ("1", "seg how-fault"), ("2", "seg how-stopped-and-recovered"),
            ("3", "seg how-stopped-and-recovered"), ("4", "seg how-fault"),
            ("5", "seg how-fault"), ("6", "seg how-failed")], bars
        for before, after in zip(bars, bars[1:]):
            assert before[2] + before[3] <= after[2] + 0.5, bars
        assert bars[0][2] >= 0 and bars[-1][2] + bars[-1][3] <= 100.5, bars
        legend = d.find_element(By.CSS_SELECTOR, "#attempt-timeline .legend").text
        assert all(h in legend for h in ("fault", "stopped and recovered", "failed")), legend
        os.makedirs(ARTIFACTS, exist_ok=True)
        d.save_screenshot(os.path.join(ARTIFACTS, "attempts.png"))
        # An attempt's logs link opens that attempt's logs.
        rows[-1].find_element(By.LINK_TEXT, "logs").click()
        wait(d, lambda d: d.find_element(By.ID, "log-attempt").get_attribute("value") == "1")
    finally:
        if d:
            d.quit()
        c.stop()


@needs_chromium
def test_a_search_finds_every_line_of_the_whole_log_and_jumps_to_one():
    # `seq 5000` as a job prints it: "line 10" is in 111 lines, the first
    # long before the last 1,000 the page reads (the search found 0 there).
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    c = Cluster(1, mode="spmd", entrypoint="seq 5000 | sed 's/^/line /'; exec sleep 600",
                extra=("--dashboard-port", "0"))
    d = None
    try:
        assert c.wait_for("initializing -> command"), c.output()
        _open_dashboard(c)
        deadline = time.time() + 60
        while time.time() < deadline:
            _, _, body = c.http.get("/api/logs/rank-0/search?q=line%205000", token=c.token)
            if json.loads(body).get("total") == 1:
                break
            time.sleep(0.2)
        status, _, body = c.http.get("/api/logs/rank-0/search?q=LINE%2010&max=5", token=c.token)
        found = json.loads(body)
        assert status == 200 and found["total"] == 111 and found["lines"] == 5000, found
        assert [m["line"] for m in found["matches"]] == [10, 100, 101, 102, 103], found
        status, _, body = c.http.get("/api/logs/rank-0/search?q=", token=c.token)
        assert status == 400 and b"give the text to look for" in body, body
        status, _, _ = c.http.get("/api/logs/nope/search?q=x", token=c.token)
        assert status == 404
        d = browser()
        d.get(c.url + "/login?token=" + c.token + "&next=/%23logs/rank-0")
        box = wait(d, lambda d: d.find_element(By.ID, "log-search"))
        wait(d, lambda d: "line 5000" in d.find_element(By.ID, "log").text)
        box.send_keys("line 10", Keys.ENTER)
        note = wait(d, lambda d: d.find_element(By.ID, "log-status").get_attribute(
            "data-matches") == "111" and d.find_element(By.ID, "log-status"))
        assert note.text == '111 lines of 5000 in the whole log contain "line 10"', note.text
        first = d.find_elements(By.CSS_SELECTOR, "#log a.log-match")[0]
        assert first.text.strip() == "10"
        os.makedirs(ARTIFACTS, exist_ok=True)
        d.save_screenshot(os.path.join(ARTIFACTS, "log-search.png"))
        first.click()
        wait(d, lambda d: d.find_element(By.ID, "log").text.startswith("line 10\nline 11\n"))
        assert d.find_element(By.ID, "log-status").text == "from line 10 (rank-0)"
    finally:
        if d:
            d.quit()
        c.stop()
