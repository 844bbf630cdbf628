"""The dashboard's web terminal against a live spmd cluster (real headnode and
workers on 127.0.0.1, HTTPS with the job's certificate): a WebSocket from a
logged-in session to a shell in a pod, relayed by the head over the control
plane, with atlctl working there with no flags; every way in without the
session, from another site or without its CSRF token refused before any
upgrade; a pod's limit; the end of the shell, of the session and of the
viewer each closing it, and each terminal opened and closed in the timeline;
the terminal in a real headless Chromium (screenshot kept under the
dashboard's test artifacts)."""
import json
import os
import signal
import socket
import sys
import time

import pytest
import websocket

from conftest import ROOT, Cluster, host_pid
from test_dashboard import (ARTIFACTS, _open_dashboard, browser, browser_login, needs_chromium,
                            session_cookie, wait)


@pytest.fixture(scope="module")
def job():
    c = Cluster(2, entrypoint="exec sleep 600", mode="spmd", own_home=True,
                extra=("--dashboard-port", "0", "--web-terminal-limit", "2", "--linger", "120s"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        _open_dashboard(c)
        yield c
    finally:
        c.stop()
        # A worker with a terminal ends with the job, as one without.
        assert "did not exit" not in c.output(), c.output()
        assert "shutdown took longer" not in c.output(), c.output()


def login(c):
    """A fresh session: its cookie header and its CSRF token."""
    cookie = session_cookie(c)
    status, _, body = c.http.get("/api/session", cookie=cookie)
    assert status == 200, body
    session = json.loads(body)
    assert session["terminal"] is True
    return cookie, session["csrf"]


def url(c, pod, csrf, rows=30, cols=100):
    return "wss://%s:%d/api/terminal/%s?csrf=%s&rows=%d&cols=%d" % (
        c.http.host, c.http.port, pod, csrf, rows, cols)


def connect(c, pod, cookie, csrf, origin=None):
    return websocket.create_connection(
        url(c, pod, csrf), origin=origin or c.url, cookie=cookie, timeout=30,
        sslopt={"ca_certs": os.path.join(c.tls, "ca.pem"), "check_hostname": False})


def type_and_read(ws, text, until, timeout=30):
    """Sends keystrokes; what the shell prints until `until` (bytes) shows up."""
    ws.send("i" + text)
    seen = b""
    deadline = time.time() + timeout
    while until not in seen:
        assert time.time() < deadline, seen
        op, data = ws.recv_data()
        assert op == websocket.ABNF.OPCODE_BINARY, (op, data)
        seen += data
    return seen


def close_reason(ws, timeout=30):
    """Reads to the head's close frame: (code, reason)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        op, data = ws.recv_data(control_frame=True)
        if op == websocket.ABNF.OPCODE_CLOSE:
            return int.from_bytes(data[:2], "big"), data[2:].decode()
    raise AssertionError("no close frame")


def events(c):
    return c.atlctl("events").stdout


def wait_event(c, text, timeout=30):
    deadline = time.time() + timeout
    while text not in events(c):
        assert time.time() < deadline, events(c)
        time.sleep(0.1)


def test_a_terminal_runs_atlctl_in_the_pod_with_no_flags(job):
    cookie, csrf = login(job)
    pod = job.job_id + "-worker-0"
    ws = connect(job, pod, cookie, csrf)
    try:
        # The marker is computed by the shell: the echo of what was typed
        # does not hold it.
        out = type_and_read(ws, "atlctl status; echo pod=$ATL_POD size=$(stty size) end-$((1+1))\r",
                            b"end-2")
        assert b"Job status:  command" in out, out
        assert ("pod=%s size=30 100" % pod).encode() in out, out
        # The window follows the browser's.
        ws.send("r40,120")
        out = type_and_read(ws, "stty size; echo end-$((2+2))\r", b"end-4")
        assert b"40 120" in out, out
    finally:
        ws.close()
    wait_event(job, "on pod %s closed after" % pod)
    text = events(job)
    assert "opened on pod %s by session " % pod in text, text
    assert "from 127.0.0.1" in text, text
    assert "closed after 0 s: the viewer closed it" in text or "the viewer closed it" in text, text
    # Not a fault: the faults-only timeline leaves terminals out.
    assert "terminal" not in job.atlctl("events", "--faults").stdout


def test_a_terminal_finds_its_own_job_on_a_host_of_several(job):
    # Job B on the same host: its pods publish their job files beside A's.
    # A's terminal knows its job (ATL_JOB_ID, ATL_ADDRESS, its credentials):
    # atlctl there is A's, with no flags.
    other = Cluster(1, entrypoint="exec sleep 600", mode="spmd", own_home=True,
                    job_id=job.job_id + "b", job_file=job.env["ATL_JOB_FILE"])
    try:
        assert other.wait_for("initializing -> command"), other.output()
        cookie, csrf = login(job)
        ws = connect(job, job.job_id + "-worker-1", cookie, csrf)
        try:
            out = type_and_read(ws, "atlctl events | grep -o 'job [^ ]* submitted'; "
                                    "echo id=$ATL_JOB_ID end-$((3+3))\r", b"end-6")
            assert ("job %s submitted" % job.job_id).encode() in out, out
            assert ("job %s submitted" % other.job_id).encode() not in out, out
            assert ("id=%s " % job.job_id).encode() in out, out
        finally:
            ws.close()
    finally:
        other.stop()


def test_no_terminal_without_a_session_from_another_site_or_without_the_token(job):
    cookie, csrf = login(job)
    pod = job.job_id + "-worker-0"
    before = events(job)

    def refused(status, words, **kw):
        with pytest.raises(websocket.WebSocketBadStatusException) as e:
            websocket.create_connection(
                kw.get("url", url(job, pod, kw.get("csrf", csrf))), origin=kw.get("origin", job.url),
                cookie=kw.get("cookie", cookie), header=kw.get("header", []), timeout=30,
                sslopt={"ca_certs": os.path.join(job.tls, "ca.pem"), "check_hostname": False})
        assert e.value.status_code == status, (status, e.value)
        body = getattr(e.value, "resp_body", None)
        if body is not None and words:
            assert words in body.decode(), body

    refused(401, "log in first", cookie="")
    refused(401, "log in first", cookie="atl_session=not-a-session")
    # The job's token as a bearer is a script, not a browser session.
    refused(401, "a terminal needs a logged-in session", cookie="",
            header=["Authorization: Bearer " + job.token])
    refused(403, "Origin 'https://evil.example'", origin="https://evil.example")
    refused(403, "CSRF", csrf="")
    refused(403, "CSRF", csrf="x" * 43)
    _, other_csrf = login(job)  # another session's token is not this one's
    refused(403, "CSRF", csrf=other_csrf)
    refused(409, "no pod named 'nope' has joined the job",
            url=url(job, "nope", csrf))
    refused(400, "rows and cols", url=url(job, pod, csrf, rows=0))
    # A plain GET with everything else right is no WebSocket.
    status, _, body = job.http.request("GET", "/api/terminal/%s?csrf=%s" % (pod, csrf),
                                       {"Cookie": cookie, "Origin": job.url})
    assert status == 400 and b"Upgrade: websocket" in body, (status, body)
    # Nothing was opened: a refusal changes nothing.
    assert events(job).count("terminal") == before.count("terminal")


def test_a_pods_limit_then_a_place_freed(job):
    cookie, csrf = login(job)
    pod = job.job_id + "-worker-1"
    a = connect(job, pod, cookie, csrf)
    b = connect(job, pod, cookie, csrf)
    try:
        with pytest.raises(websocket.WebSocketBadStatusException) as e:
            connect(job, pod, cookie, csrf)
        assert e.value.status_code == 409
        # Another pod has its own places.
        other = connect(job, job.job_id + "-worker-0", cookie, csrf)
        other.close()
        a.close()
        deadline = time.time() + 30
        while True:
            try:
                c = connect(job, pod, cookie, csrf)
                break
            except websocket.WebSocketBadStatusException:
                assert time.time() < deadline
                time.sleep(0.2)
        type_and_read(c, "echo again-$((3+3))\r", b"again-6")
        c.close()
    finally:
        a.close()
        b.close()


def test_the_shells_exit_the_sessions_end_and_a_dropped_viewer_each_close_it(job):
    cookie, csrf = login(job)
    pod = job.job_id + "-worker-0"
    ws = connect(job, pod, cookie, csrf)
    type_and_read(ws, "echo ready-$((1+1))\r", b"ready-2")
    ws.send("iexit 3\r")
    assert close_reason(ws) == (1000, "the shell ended with exit code 3")
    ws.close()
    wait_event(job, "closed after 0 s: the shell ended with exit code 3")

    # Logging out ends the session's terminals (checked at least once a second).
    ws = connect(job, pod, cookie, csrf)
    type_and_read(ws, "echo ready-$((2+2))\r", b"ready-4")
    status, _, _ = job.http.request("POST", "/logout", {"Cookie": cookie})
    assert status == 303
    assert close_reason(ws) == (1001, "the session ended")
    ws.close()
    wait_event(job, ": the session ended")

    # A viewer whose connection just drops: the shell is hung up all the same.
    cookie, csrf = login(job)
    ws = connect(job, pod, cookie, csrf)
    out = type_and_read(ws, "echo pid-$$ end-$((3+3))\r", b"end-6")
    shell = host_pid(pod, int(out.split(b"pid-")[-1].split()[0]))
    ws.sock.shutdown(socket.SHUT_RDWR)
    ws.sock.close()
    deadline = time.time() + 30
    while os.path.exists("/proc/%d" % shell):
        assert time.time() < deadline, "the shell %d outlived its viewer" % shell
        time.sleep(0.1)
    wait_event(job, ": the viewer's connection dropped")


def test_a_lost_pod_closes_its_terminals_and_its_shell_goes_with_it():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import common
    # An id of its own: the module's other cluster has a worker-1 too.
    c = Cluster(2, entrypoint="exec sleep 600", mode="spmd", own_home=True,
                job_id="jo-pylost" + str(os.getpid()),
                extra=("--dashboard-port", "0", "--max-restarts", "0", "--linger", "60s"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        _open_dashboard(c)
        cookie, csrf = login(c)
        ws = connect(c, c.job_id + "-worker-1", cookie, csrf)
        out = type_and_read(ws, "echo pid-$$ end-$((3+3))\r", b"end-6")
        shell = host_pid(c.job_id + "-worker-1", int(out.split(b"pid-")[-1].split()[0]))
        worker = common.workernode_pid(c.job_id, 1)
        assert worker, c.output()
        os.kill(worker, signal.SIGKILL)
        assert close_reason(ws, timeout=60) == (1001, "the connection to the pod dropped")
        ws.close()
        deadline = time.time() + 30
        while os.path.exists("/proc/%d" % shell):  # hung up with its node
            assert time.time() < deadline, "the shell %d outlived its pod" % shell
            time.sleep(0.1)
        wait_event(c, ": the connection to the pod dropped")
    finally:
        c.stop()


def test_terminal_off():
    c = Cluster(1, entrypoint="exec sleep 600", mode="spmd", own_home=True,
                extra=("--dashboard-port", "0", "--web-terminal", "off"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        _open_dashboard(c)
        cookie = session_cookie(c)
        status, _, body = c.http.get("/api/session", cookie=cookie)
        session = json.loads(body)
        assert session["terminal"] is False
        with pytest.raises(websocket.WebSocketBadStatusException) as e:
            connect(c, c.job_id + "-worker-0", cookie, session["csrf"])
        assert e.value.status_code == 404
    finally:
        c.stop()


@needs_chromium
def test_a_pods_terminal_in_chromium(job):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    os.makedirs(ARTIFACTS, exist_ok=True)
    pod = job.job_id + "-worker-0"
    d = browser()
    try:
        browser_login(d, job)
        wait(d, lambda d: d.find_element(By.ID, "card-state").text == "command (running)")
        d.get(job.url + "/#pods")
        link = wait(d, lambda d: d.find_element(By.CSS_SELECTOR, 'a.terminal-link[data-pod="%s"]' % pod))
        link.click()
        wait(d, lambda d: d.find_element(By.ID, "terminal-status").text == "connected to " + pod)
        # The screen's text as drawn (xterm's DOM renderer), spaces kept:
        # Selenium's .text would fold the two after "Job status:".
        rows = lambda d: d.execute_script(
            "return document.querySelector('#terminal .xterm-rows').textContent").replace(
                "\u00a0", " ")
        # "connected" is the page's socket to the head; the pod's shell and
        # its prompt come after (30 s ran out once in a full ctest -j2, with
        # the fuzz test on the other core): a failure says what the screen
        # showed, and keeps it.
        try:
            wait(d, lambda d: "$" in rows(d) or "#" in rows(d), timeout=60)
        except AssertionError:
            d.save_screenshot(os.path.join(ARTIFACTS, "terminal-no-prompt.png"))
            raise AssertionError("no prompt in the pod's terminal in 60 s; the screen: %r"
                                 % rows(d))
        box = d.find_element(By.CSS_SELECTOR, "#terminal .xterm-helper-textarea")
        box.send_keys("atlctl status" + Keys.ENTER)
        wait(d, lambda d: "Job status:  command" in rows(d))
        d.save_screenshot(os.path.join(ARTIFACTS, "terminal.png"))
        # Leaving the page closes the terminal.
        d.get(job.url + "/#job")
        wait_event(job, "closed after")
    finally:
        d.quit()


def test_a_ray_pods_shell_looks_at_its_own_jobs_ray():
    """In ray mode, `ray status` in a pod's terminal is this job's Ray (its
    address and token in the shell), whatever other Ray runs on the host."""
    from conftest import BIN
    ray = os.path.join(os.path.dirname(BIN), "ray-venv", "bin", "ray")
    if not os.path.exists(ray):
        pytest.skip("no Ray venv (build/ray-venv, made by the Ray tests)")
    python = os.path.join(os.path.dirname(ray), "python3")
    c = Cluster(2, mode="ray", own_home=True, nproc_per_node=1,
                entrypoint=python + " -c 'import ray, time; ray.init(); "
                                    "print(\"DRIVER UP\", flush=True); time.sleep(600)'",
                extra=("--dashboard-port", "0", "--ray-bin", ray))
    try:
        assert c.wait_for("DRIVER UP", timeout=240), c.output()
        _open_dashboard(c)
        cookie, csrf = login(c)
        ws = connect(c, c.job_id + "-worker-0", cookie, csrf)
        try:
            # Ray's status is its autoscaler's view, a few seconds behind its GCS.
            out = type_and_read(ws, "for i in $(seq 60); do n=$(%s status 2>&1 | grep -c ' node_');"
                                    " [ $n -ge 3 ] && break; sleep 1; done; echo nodes=$n"
                                    " end-$((3+4))\r" % ray, b"end-7", timeout=120)
        finally:
            ws.close()
        assert b"nodes=3 end-7" in out, out.decode(errors="replace")  # the head and the two pods
    finally:
        c.stop()


def _vm(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no %s for pid %d" % (field, pid))


def test_a_paste_slows_its_terminal_never_its_pod(job):
    # 420 MB pasted grew the pod by 410 MB, never returned, and once cost two
    # pods their heartbeats: input had no flow control. Now at most a window
    # of keystrokes is on its way; the rest waits in the viewer's TCP.
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import common
    pod = job.job_id + "-worker-1"
    node = common.workernode_pid(job.job_id, 1)
    assert node, "no workernode of " + pod
    cookie, csrf = login(job)
    ws = connect(job, pod, cookie, csrf)
    # The shell takes nothing for 3 s (the paste piles up), then everything.
    type_and_read(ws, "stty raw -echo; echo go-$((2+5)); sleep 3; cat > /dev/null\r", b"go-7")
    before = _vm(node, "VmRSS")
    peak = before
    chunk = "i" + "x" * (64 * 1024 - 1)
    total = 200 * 1024 * 1024
    sent = 0
    while sent < total:
        ws.send(chunk)  # blocks while the head reads no more of it
        sent += len(chunk) - 1
        if sent % (4 * 1024 * 1024) < len(chunk):
            peak = max(peak, _vm(node, "VmRSS"))
    peak = max(peak, _vm(node, "VmRSS"))
    assert peak - before < 10 * 1024 * 1024, (before, peak)
    # The pod's heartbeats held: no pod lost, no restart.
    info = json.loads(job.atlctl("status", "--json").stdout)
    assert info["restarts"] == 0, info
    assert info["pod_counts"]["lost"] == 0, info
    ws.close()


@needs_chromium
def test_an_ended_jobs_terminal_says_why_there_is_none():
    # The job ended (its pods gone), the dashboard lingers: the page says so
    # at once instead of "connecting…", and the head refuses the socket.
    from selenium.webdriver.common.by import By
    c = Cluster(1, entrypoint="true", mode="spmd", own_home=True,
                extra=("--dashboard-port", "0", "--linger", "120s"))
    d = None
    try:
        assert c.wait_for("Job status:  succeeded", 60), c.output()
        _open_dashboard(c)
        pod = c.job_id + "-worker-0"
        cookie = session_cookie(c)
        _, _, body = c.http.get("/api/session", cookie=cookie)
        with pytest.raises(websocket.WebSocketBadStatusException) as e:
            connect(c, pod, cookie, json.loads(body)["csrf"])
        assert e.value.status_code == 409, e.value
        d = browser()
        browser_login(d, c)
        d.get(c.url + "/#terminal/" + pod)
        note = wait(d, lambda d: d.find_element(By.ID, "terminal-status"))
        assert note.text == ("The job has ended (succeeded): its pods are gone, so there is no "
                             "shell to open. Its logs stay: see Logs."), note.text
    finally:
        if d:
            d.quit()
        c.stop()


def test_a_pod_that_does_not_start_the_shell_is_refused_and_its_place_freed():
    # The pod's node is stopped (SIGSTOP: its agent cannot answer) when the
    # terminal is asked for: the browser hears why within the open's bound,
    # and the place the grant took is given back (the pod's limit is 1 here:
    # a place kept would refuse the next terminal with 409 for ever).
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import common
    c = Cluster(2, entrypoint="exec sleep 600", mode="spmd", own_home=True,
                job_id="jo-pystart" + str(os.getpid()),
                extra=("--dashboard-port", "0", "--web-terminal-limit", "1",
                       "--heartbeat-timeout", "120s", "--linger", "60s"))
    worker = None
    try:
        assert c.wait_for("initializing -> command"), c.output()
        _open_dashboard(c)
        cookie, csrf = login(c)
        pod = c.job_id + "-worker-1"
        worker = common.workernode_pid(c.job_id, 1)
        assert worker, c.output()
        os.kill(worker, signal.SIGSTOP)
        began = time.time()
        with pytest.raises(websocket.WebSocketBadStatusException) as e:
            connect(c, pod, cookie, csrf)
        assert e.value.status_code == 503, e.value
        body = getattr(e.value, "resp_body", None)
        if body is not None:
            assert ("pod %s did not start a shell" % pod) in body.decode(), body
        assert time.time() - began < 25, "the open's bound is 10 s for the pod"
        os.kill(worker, signal.SIGCONT)
        worker = None
        ws = connect(c, pod, cookie, csrf)
        type_and_read(ws, "echo back-$((3+3))\r", b"back-6")
        ws.close()
        text = events(c)
        assert text.count("opened on pod %s" % pod) == 1, text
    finally:
        if worker:
            os.kill(worker, signal.SIGCONT)
        c.stop()
