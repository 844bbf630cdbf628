#!/usr/bin/env python3
"""bench/terminal: does the dashboard's web terminal slow the job's log path?
bench/logs' workload (one rank printing 100-byte lines through atl, TLS on)
timed with no terminal open, and with 20 web terminals open into the rank's
pod the whole time, each running a shell loop that prints a line every half
second (an operator watching something), read by 20 WebSocket clients.
Runs alternate; no line may be lost.

The time is from the moment the rank starts printing (a go file) to the
head's exit. The clients are threads of this script on the same 2 cores:
their TLS and WebSocket work is counted against atl, as a pessimist would.

Usage: bench/terminal/run.py [--mb 200] [--runs 7] [--terminals 20]
                             [--tmp /dev/shm] [--out bench/results/dashboard.md]
The report is appended to --out (the dashboard's costs live together).
"""
import argparse
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.ROOT, "bench", "logs"))
from run import LINE_BYTES, count_lines, generator  # noqa: E402

try:
    import websocket  # python3-websocket (scripts/setup.sh --tests)
except ImportError:
    raise SystemExit("bench/terminal needs python3-websocket (scripts/setup.sh --tests)")

# bash builtins only (printf's time, read's timeout): the loop forks
# nothing, so what is measured is the terminal's path, not 40 date
# processes a second competing for the cores.
LOOP = "while :; do printf '%(%T)T watching %s\\n' -1 \"$ATL_POD\"; read -t 0.5 _; done\r"


def login(url, token):
    parts = urllib.parse.urlsplit(url)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the job's certificate names no host
    conn = http.client.HTTPSConnection(parts.hostname, parts.port, context=ctx, timeout=30)
    conn.request("POST", "/login", body="token=" + token,
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    r = conn.getresponse()
    r.read()
    cookie = r.getheader("Set-Cookie").split(";")[0]
    conn.request("GET", "/api/session", headers={"Cookie": cookie})
    csrf = json.loads(conn.getresponse().read())["csrf"]
    conn.close()
    return cookie, csrf


class Viewer(threading.Thread):
    """One browser tab: a terminal into the pod, reading all it prints."""

    def __init__(self, url, pod, cookie, csrf):
        super().__init__(daemon=True)
        self.mark = ("watching " + pod).encode()  # the loop's line, not its echo
        self.lines = 0
        parts = urllib.parse.urlsplit(url)
        self.ws = websocket.create_connection(
            "wss://%s:%d/api/terminal/%s?csrf=%s" % (parts.hostname, parts.port, pod, csrf),
            origin=url, cookie=cookie, timeout=60, sslopt={"cert_reqs": ssl.CERT_NONE})
        self.bytes = 0
        self.ws.send("i" + LOOP)
        self.start()

    def run(self):
        try:
            while True:
                op, data = self.ws.recv_data()
                if op != websocket.ABNF.OPCODE_BINARY:
                    return
                self.bytes += len(data)
                self.lines += data.count(self.mark)
        except Exception:
            return


def one_run(cmd, tmp, run, terminals):
    job = "bench-term-%d-%d" % (run, terminals)
    head, out, state, log, go, url, token = common.start_printing_job(
        cmd, tmp, "%d-%d" % (run, terminals),
        extra=("--job-id", job, "--web-terminal-limit", "100"))
    viewers = []
    if terminals:
        cookie, csrf = login(url, token)
        viewers = [Viewer(url, job + "-worker-0", cookie, csrf) for _ in range(terminals)]
        deadline = time.time() + 60
        # Every shell has read its rc files (this machine's may be slow) and
        # its loop is printing.
        while not all(v.lines >= 2 for v in viewers):
            if time.time() > deadline:
                raise SystemExit("a terminal did not start its loop")
            time.sleep(0.05)
    code, took = common.go_and_time(head, go)
    for v in viewers:
        v.join(30)
    if code != 0:
        raise SystemExit("the job failed (%d): see %s" % (code, out.name))
    lines = count_lines(log) - 1  # the "ready" line
    shutil.rmtree(state)
    # The head echoes the rank's output: hundreds of MB a run, in tmpfs.
    out.close()
    os.remove(out.name)
    return took, lines, [v.bytes for v in viewers]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--terminals", type=int, default=20)
    ap.add_argument("--tmp", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "dashboard.md"))
    args = ap.parse_args()
    lines = args.mb * 1_000_000 // LINE_BYTES
    cmd = generator(lines)
    alone, watched, received = [], [], []
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for run in range(args.runs):
            for n, times in ((0, alone), (args.terminals, watched)):
                took, got, per = one_run(cmd, tmp, run, n)
                if got != lines:
                    raise SystemExit("lines lost with %d terminals: %d of %d" % (n, got, lines))
                times.append(took)
                if n:
                    received.append(common.median(per))
            print("alone %.2f s, %d terminals %.2f s (each got %.0f bytes)"
                  % (alone[-1], args.terminals, watched[-1], received[-1]), flush=True)
    a, w = common.median(alone), common.median(watched)
    mb = lines * LINE_BYTES / 1e6
    slowdown = (w / a - 1) * 100
    paired = (common.median([y / x for x, y in zip(alone, watched)]) - 1) * 100
    report = [
        "",
        f"# bench/terminal: {args.terminals} web terminals open during bench/logs",
        "",
        f"Machine: {common.machine()}.",
        f"Command: `bench/terminal/run.py --mb {args.mb} --runs {args.runs} "
        f"--terminals {args.terminals}` (median of {args.runs}, runs alternating).",
        f"Workload: bench/logs': {lines:,} lines of {LINE_BYTES} bytes ({mb:.0f} MB) from one rank",
        "through atl (TLS on), timed from the rank's first printed byte to the head's exit.",
        f"Terminals: {args.terminals} WebSocket clients (threads of the bench, on the same cores),",
        "each with a shell in the rank's pod printing a line every 0.5 s, all open before the",
        "rank starts printing.",
        "",
        "| web terminals | wall (s) | MB/s | lines in log |",
        "|---|---:|---:|---:|",
        f"| none | {a:.2f} | {mb/a:.0f} | {lines:,} |",
        f"| {args.terminals} open | {w:.2f} | {mb/w:.0f} | {lines:,} (none lost) |",
        "",
        f"Slowdown: **{slowdown:+.1f}%** of the median (target <= +5%); the median of the paired "
        f"ratios: {paired:+.1f}%.",
        *common.paired_lines(alone, watched, "with terminals", "watched"),
    ]
    with open(args.out, "a") as out:
        out.write("\n".join(report) + "\n")
    print("\n".join(report[-3:]))
    print("appended to " + args.out)


if __name__ == "__main__":
    main()
