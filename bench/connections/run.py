#!/usr/bin/env python3
"""bench/connections: what idle and hostile connections cost the head.

One job (1 local worker pod, `sleep 600`), then:
  idle      IDLE plain TCP connections that never speak and HALF connections
            that send a ClientHello's first bytes and stop (a TLS handshake that
            never finishes) held on the head's port for WINDOW seconds: the
            head's CPU over the window, `atlctl status` while they are held, its
            RSS before, while held and after they close.
  dashboard the same number of idle connections on the dashboard's port: how
            long an authenticated GET /api/status takes while they are held.
  calls     CALLS `atlctl status` calls (4 at a time): the head's RSS before and
            after (each atlctl is a new CAF node to the head).

Usage: bench/connections/run.py [--idle 1000] [--half 500] [--window 10]
                                [--calls 10000] [--out bench/results/connections.md]
"""
import argparse
import concurrent.futures
import os
import resource
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

CLIENT_HELLO_START = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit(f"no VmRSS for {pid}")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Head:
    def __init__(self, tmp):
        self.state = os.path.join(tmp, "state")
        self.out_path = os.path.join(tmp, "head.out")
        self.out = open(self.out_path, "w")
        self.proc = subprocess.Popen(
            [common.binary("headnode"), "--port", "0", "--workers", "1", "--local-workers", "1",
             "--state-dir", self.state, "--dashboard-port", "0", "--", "sleep 600"],
            stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True)
        self.address = self.line_after("listening on ")
        self.url = self.line_after("dashboard ").split()[0]
        self.env = dict(os.environ, ATL_TLS_DIR=os.path.join(self.state, "tls"))
        deadline = time.time() + 60
        while self.status()[1] != "Job status:  command\n":
            if time.time() > deadline:
                raise SystemExit("the job did not start: see " + self.out_path)
            time.sleep(0.2)
        self.token = open(os.path.join(self.state, "dashboard-token")).read().strip()

    def line_after(self, marker, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in open(self.out_path, errors="replace"):
                if line.startswith(marker):
                    return line[len(marker):].strip()
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit(f"the head printed no '{marker}': see {self.out_path}")

    def status(self):
        t0 = time.monotonic()
        r = subprocess.run([common.binary("atlctl"), "--address", self.address, "status"],
                           capture_output=True, text=True, env=self.env)
        return time.monotonic() - t0, r.stdout if r.returncode == 0 else r.stderr

    def port(self):
        return int(self.address.rsplit(":", 1)[1])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def hold(port, idle, half):
    socks = []
    for i in range(idle + half):
        s = socket.create_connection(("127.0.0.1", port))
        if i >= idle:
            s.sendall(CLIENT_HELLO_START)
        socks.append(s)
    return socks


def dashboard_get(head):
    ctx = ssl.create_default_context(cafile=os.path.join(head.state, "tls", "ca.pem"))
    req = urllib.request.Request(head.url.rstrip("/") + "/api/status",
                                 headers={"Authorization": "Bearer " + head.token})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=30, context=ctx) as r:
        r.read()
        code = r.status
    return time.monotonic() - t0, code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--half", type=int, default=500)
    ap.add_argument("--window", type=float, default=10.0)
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results",
                                                  "connections.md"))
    args = ap.parse_args()
    need = args.idle + args.half + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    tmp = tempfile.mkdtemp(prefix="atl-bench-conn-")
    head = Head(tmp)
    pid = head.proc.pid
    rows = []
    try:
        for _ in range(20):  # warm: what the first calls allocate is reused later
            head.status()
        base_status = sorted(head.status()[0] for _ in range(5))[2]
        base_rss = rss_kib(pid)
        t0, c0 = time.monotonic(), cpu_seconds(pid)
        time.sleep(args.window)
        idle_cpu = (cpu_seconds(pid) - c0) / (time.monotonic() - t0)

        c_open = cpu_seconds(pid)
        socks = hold(head.port(), args.idle, args.half)
        took, out = head.status()
        time.sleep(1.0)  # the accepts done: what follows is the cost of holding them
        accepting = cpu_seconds(pid) - c_open
        held_rss = rss_kib(pid)
        t0, c0 = time.monotonic(), cpu_seconds(pid)
        time.sleep(args.window)  # the measuring window, not a wait for an event
        busy = (cpu_seconds(pid) - c0) / (time.monotonic() - t0)
        held_statuses = sorted(head.status()[0] for _ in range(5))
        dropped_rss = rss_kib(pid)  # past the 5 s handshake deadline
        for s in socks:
            s.close()
        deadline = time.time() + 10
        after_rss = rss_kib(pid)
        while after_rss - base_rss > 5 * 1024 and time.time() < deadline:
            time.sleep(0.1)
            after_rss = rss_kib(pid)
        rows += [
            ("head CPU, idle job, no extra connections", f"{idle_cpu * 100:.1f}% of a core", ""),
            (f"head CPU to accept {args.idle} idle + {args.half} half handshakes "
             "(and answer one status)", f"{accepting:.2f} s", ""),
            (f"head CPU while they are held, over the next {args.window:g} s",
             f"{busy * 100:.1f}% of a core", "< 5%"),
            ("`atlctl status` (a new TLS connection) with them held: first / median of 5",
             f"{took:.2f} s / {held_statuses[2]:.2f} s", "< 1 s"),
            ("`atlctl status` with none held, median of 5", f"{base_status:.2f} s", ""),
            ("first status answer while held", out.strip(), "Job status:  command"),
            ("head RSS before / held (1 s in) / past the 5 s deadline / after closing",
             f"{base_rss / 1024:.1f} / {held_rss / 1024:.1f} / {dropped_rss / 1024:.1f} / "
             f"{after_rss / 1024:.1f} MiB",
             "after within 5 MiB of before"),
        ]

        dash_base = sorted(dashboard_get(head)[0] for _ in range(5))[2]
        dport = int(head.url.rstrip("/").rsplit(":", 1)[1])
        socks = hold(dport, args.idle, 0)
        dash_held, code = dashboard_get(head)
        threads = len(os.listdir(f"/proc/{pid}/task"))
        for s in socks:
            s.close()
        rows += [
            (f"dashboard GET /api/status, none held / {args.idle} idle held",
             f"{dash_base:.3f} s / {dash_held:.3f} s (HTTP {code})", "answered"),
            (f"head threads with {args.idle} idle dashboard connections", str(threads), ""),
        ]

        before = rss_kib(pid)
        failed = 0
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            for _, out in pool.map(lambda _: head.status(), range(args.calls)):
                failed += out != "Job status:  command\n"
        wall = time.monotonic() - t0
        after = rss_kib(pid)
        rows += [
            (f"{args.calls} `atlctl status` calls (4 at a time): head RSS before / after",
             f"{before / 1024:.1f} / {after / 1024:.1f} MiB ({(after - before) / 1024:+.2f})",
             "change < 2 MiB"),
            (f"{args.calls} calls: failed, wall", f"{failed}, {wall:.0f} s "
             f"({args.calls / wall:.0f}/s)", "0 failed"),
        ]
    finally:
        head.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    lines = [
        "# bench/connections: idle and hostile connections against the head",
        f"Machine: {common.machine()}.",
        f"Command: `bench/connections/run.py --idle {args.idle} --half {args.half} "
        f"--window {args.window:g} --calls {args.calls}`. One job: head with TLS, 1 local "
        "worker pod, `sleep 600`; the bench holds its connections from its own process.",
        "",
        "| measure | result | target |",
        "|---|---:|---|",
    ] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
