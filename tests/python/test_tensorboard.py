"""TensorBoard behind the dashboard's login (headnode --tensorboard-logdir):
the head runs the image's tensorboard (here TensorBoard 2.21 from PyPI, in
build/tb-venv, made on first use) on the head pod's loopback, and the
dashboard relays it at /tensorboard/: refused without a session, its pages
and its data (GETs, and the POSTs it asks for scalars with) with one, any
other POST refused; a job without a tensorboard in PATH still runs and says
so. In a real headless Chromium: the job page's link, TensorBoard's page
showing the run's scalar."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse

import pytest

from conftest import BIN, ROOT, Cluster
from test_dashboard import (ARTIFACTS, _open_dashboard, browser, browser_login, needs_chromium,
                            session_cookie, wait)

VENV = os.path.join(os.path.dirname(BIN), "tb-venv")
MARKER = os.path.join(VENV, ".atl-tensorboard-2.21.0")

# Ten steps of a "loss" scalar in run "train", written with TensorBoard's own
# event writer (no TensorFlow, no torch).
WRITE_EVENTS = r"""
import sys, time
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
w = EventFileWriter(sys.argv[1])
for step in range(10):
    value = summary_pb2.Summary.Value(tag="loss", simple_value=1.0 / (step + 1))
    w.add_event(event_pb2.Event(wall_time=time.time(), step=step,
                                summary=summary_pb2.Summary(value=[value])))
w.close()
"""


@pytest.fixture(scope="module")
def tensorboard_bin():
    if not os.path.exists(MARKER):
        make = ("flock {v}.lock sh -c '[ -e {m} ] || {{ {{ [ -x {v}/bin/pip ] || "
                "/usr/bin/python3 -m venv {v}; }} && {v}/bin/pip install -q "
                "tensorboard==2.21.0 && touch {m}; }}' > {v}.log 2>&1").format(v=VENV, m=MARKER)
        if subprocess.call(make, shell=True) != 0 or not os.path.exists(MARKER):
            pytest.skip("TensorBoard could not be installed from PyPI (see %s.log)" % VENV)
    return os.path.join(VENV, "bin", "tensorboard")


@pytest.fixture(scope="module")
def job(tensorboard_bin):
    logdir = tempfile.mkdtemp(prefix="atl-tb-")
    subprocess.check_call([os.path.join(VENV, "bin", "python"), "-c", WRITE_EVENTS,
                           os.path.join(logdir, "train")])
    c = Cluster(1, entrypoint="exec sleep 600", mode="spmd",
                extra=("--dashboard-port", "0", "--tensorboard-logdir", logdir,
                       "--tensorboard-bin", tensorboard_bin, "--linger", "60s"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        _open_dashboard(c)
        assert c.line("tensorboard ") == "tensorboard %s/tensorboard/ (logdir %s)" % (c.url, logdir)
        yield c
    finally:
        c.stop()
        # TensorBoard ended with the head.
        left = subprocess.run(["pgrep", "-f", "tensorboard --logdir " + logdir],
                              capture_output=True, text=True).stdout.split()
        shutil.rmtree(logdir, ignore_errors=True)
        assert not left, left


def until(what, timeout=90):
    deadline = time.time() + timeout
    while True:
        got = what()
        if got:
            return got
        assert time.time() < deadline, "timed out"
        time.sleep(0.5)


def test_tensorboard_is_behind_the_login(job):
    for method, path in (("GET", "/tensorboard/"), ("GET", "/tensorboard/data/runs"),
                         ("POST", "/tensorboard/data/plugin/scalars/scalars_multirun")):
        status, _, body = job.http.request(method, path)
        assert status == 401, (method, path, status, body)
        status, _, body = job.http.request(method, path, {"Cookie": "atl_session=forged"})
        assert status == 401, (method, path, status, body)


def test_tensorboards_pages_and_data_with_a_session(job):
    cookie = session_cookie(job)
    status, _, body = job.http.get("/api/session", cookie=cookie)
    assert json.loads(body)["tensorboard"] is True

    def runs():
        status, _, body = job.http.get("/tensorboard/data/runs", cookie=cookie)
        return status == 200 and "train" in json.loads(body)
    until(runs)
    # As a browser asks (br, gzip): the service's bytes as they came, never
    # re-compressed by the dashboard's HTTP library on the way (that broke
    # TensorBoard's pages in Chromium).
    status, headers, body = job.http.request(
        "GET", "/tensorboard/", {"Cookie": cookie, "Accept-Encoding": "gzip, deflate, br"})
    assert status == 200 and b"<title>TensorBoard</title>" in body, (status, body[:200])
    assert headers.get("Content-Encoding") in (None, "identity"), headers
    # Its scalars come by POST (a read): relayed.
    status, _, body = job.http.request(
        "POST", "/tensorboard/data/plugin/scalars/scalars_multirun",
        {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"},
        urllib.parse.urlencode({"tag": "loss", "runs": "train"}))
    assert status == 200, (status, body)
    points = json.loads(body)["train"]
    assert [p[1] for p in points] == list(range(10)), points
    assert abs(points[3][2] - 0.25) < 1e-6, points
    # Its Time Series page (the default view) asks by multipart/form-data,
    # which the dashboard's HTTP library parses and keeps no bytes of: the
    # relay writes the form again (it relayed an empty body: "Missing
    # 'requests' field", charts without data).
    boundary = "----WebKitFormBoundaryatl7MA4YWxk"
    form = ("--" + boundary + "\r\n"
            'Content-Disposition: form-data; name="requests"\r\n\r\n'
            + json.dumps([{"plugin": "scalars", "tag": "loss"}]) + "\r\n"
            "--" + boundary + "--\r\n")
    status, _, body = job.http.request(
        "POST", "/tensorboard/data/plugin/timeseries/timeSeries",
        {"Cookie": cookie, "Content-Type": "multipart/form-data; boundary=" + boundary}, form)
    assert status == 200, (status, body)
    series = json.loads(body)
    assert len(series) == 1 and "error" not in series[0], series
    steps = [p["step"] for p in series[0]["runToSeries"]["train"]]
    assert steps == list(range(10)), series
    # Any other POST acts, and is refused with what to do instead.
    status, headers, body = job.http.request("POST", "/tensorboard/data/runs", {"Cookie": cookie})
    assert status == 405 and b"read-only through the dashboard" in body, (status, body)


def test_a_job_whose_image_has_no_tensorboard_runs_and_says_so():
    c = Cluster(1, entrypoint="echo done", mode="spmd",
                extra=("--dashboard-port", "0", "--tensorboard-logdir", "/tmp",
                       "--tensorboard-bin", "no-such-tensorboard"))
    try:
        assert c.wait_exit(120) == 0, c.output()
        out = c.output()
        assert ("headnode: warning: TensorBoard: 'no-such-tensorboard' is not in this pod's PATH"
                in out), out
        assert "\ntensorboard " not in out
    finally:
        c.stop()


@needs_chromium
def test_tensorboard_in_chromium(job):
    from selenium.webdriver.common.by import By
    os.makedirs(ARTIFACTS, exist_ok=True)
    d = browser()
    try:
        d.get(job.url + "/tensorboard/")
        wait(d, lambda d: urllib.parse.urlsplit(d.current_url).path == "/login" or
             "log in" in d.page_source.lower())
        browser_login(d, job)
        link = wait(d, lambda d: d.find_element(By.ID, "tensorboard"))
        assert link.get_attribute("href") == job.url + "/tensorboard/"
        d.get(job.url + "/tensorboard/")
        wait(d, lambda d: d.title == "TensorBoard", timeout=60)
        wait(d, lambda d: "loss" in d.find_element(By.TAG_NAME, "body").text, timeout=90)
        # The chart's data as the page asks for it: Chromium's own multipart
        # form (FormData), through the relay, answered with the ten points.
        answer = d.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const form = new FormData();
            form.append('requests', JSON.stringify([{plugin: 'scalars', tag: 'loss'}]));
            fetch('/tensorboard/data/plugin/timeseries/timeSeries', {method: 'POST', body: form})
                .then(r => r.text().then(t => done([r.status, t])))
                .catch(e => done([0, String(e)]));""")
        assert answer[0] == 200, answer
        points = json.loads(answer[1])[0]["runToSeries"]["train"]
        assert [p["step"] for p in points] == list(range(10)), answer
        d.save_screenshot(os.path.join(ARTIFACTS, "tensorboard.png"))
    finally:
        d.quit()
