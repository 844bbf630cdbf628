#!/usr/bin/env python3
"""bench/retention: what the head keeps of the debug runs and tasks it dropped.

Runs (default): one head with 64 simulated pods x 8 ranks (workernode
--simulate --fake-ranks), then --runs x `atlctl run -f -r all echo hi`.
Tasks (--tasks N): a driver-mode head with one local pod, and this process as
a second driver (the Python package) starting N tasks (`atl.run("echo hi")`,
each waited for), 8 at a time.
Every --every runs or tasks: the head's RSS, the files and links in its state
dir, the `/metrics` series and the time one scrape takes. The history keeps at
most 10,000 ended runs (and 20,000 rank records: ~39 runs of 512 ranks) and
10,000 finished tasks: past that, a dropped record's streams, files and series
go with it (issue 43). Writes bench/results/retention.md (retention-tasks.md).

Usage: bench/retention/run.py [--runs 1000] [--every 100]
       bench/retention/run.py --tasks 20000 --every 2000
"""
import argparse
import concurrent.futures
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

PODS, RANKS = 64, 8


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=0, help="driver tasks instead of debug runs")
    args = ap.parse_args()
    tasks = args.tasks > 0
    # A SIGTERM ends the bench through its `finally`: the head and pods go too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = tempfile.mkdtemp(prefix="atl-retention-")
    st = os.path.join(work, "st")
    env = dict(os.environ, ATL_JOB_FILE=os.path.join(work, "job.json"))
    out = open(os.path.join(work, "head.out"), "w")
    shape = (["--mode", "driver", "--workers", "1", "--local-workers", "1"] if tasks else
             ["--workers", str(PODS), "--nproc-per-node", str(RANKS)])
    head = subprocess.Popen(
        [common.binary("headnode"), "--job-id", "jo-retention", *shape,
         "--port", "0", "--state-dir", st,
         "--dashboard-port", "off", "--metrics-port", "0", "--", "sleep 100000"],
        stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    procs = [head]
    try:
        address = common.wait_line(out.name, "listening on ").split()[-1]
        metrics = common.wait_line(out.name, "metrics ").split()[-1]
        if not tasks:
            procs.append(subprocess.Popen(
                [common.binary("workernode"), "--head", address, "--name",
                 "jo-retention-worker-0", "--simulate", str(PODS), "--fake-ranks", "--node", "sim",
                 "--cpus", "8", "--gpus", "0", "--tls-dir", os.path.join(st, "tls")],
                stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env,
                start_new_session=True))

        def atlctl(*a):
            r = subprocess.run([common.binary("atlctl"), "--address", address, *a], env=env,
                               capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                raise SystemExit("atlctl %s: %s %s" % (a, r.stdout[-300:], r.stderr[-300:]))
            return r.stdout

        deadline = time.time() + 120
        while '"state": "command"' not in atlctl("status", "--json"):
            if time.time() > deadline:
                raise SystemExit("the job did not reach command")
            time.sleep(0.2)

        def rss_mib():
            for line in open("/proc/%d/status" % head.pid):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
            return 0

        def files():
            n = 0
            for _, dirs, names in os.walk(os.path.join(st, "logs")):
                n += len(names)
            return n

        def scrape():
            t0 = time.time()
            text = urllib.request.urlopen(metrics if metrics.startswith("http") else
                                          "http://" + metrics + "/metrics", timeout=60).read()
            took = time.time() - t0
            series = sum(1 for line in text.decode().splitlines()
                         if line.startswith("atl_log_bytes_total"))
            return series, took, len(text)

        rows = []
        t0 = time.time()

        def sample(i):
            series, took, size = scrape()
            rows.append((i, rss_mib(), files(), series, size, took))
            print(rows[-1], flush=True)

        if tasks:
            sys.path.insert(0, os.path.join(common.ROOT, "python"))
            import atl
            atl.init(address, os.path.join(st, "tls"))

            def one(_):
                code = atl.run("echo hi").wait(timeout=120)
                if code != 0:
                    raise SystemExit("a task ended with %d" % code)

            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                done = 0
                while done < args.tasks:
                    step = (min(args.every - done % args.every, args.tasks - done)
                            if done else 1)
                    list(pool.map(one, range(step)))
                    done += step
                    sample(done)
            atl.shutdown()
        else:
            for i in range(1, args.runs + 1):
                atlctl("run", "-f", "-r", "all", "echo hi")
                if i % args.every == 0 or i == 1:
                    sample(i)
        wall = time.time() - t0
        # Once the long polls' deadline timers (60 s) have fired: what stays.
        time.sleep(65)
        sample("%d, 65 s later" % (args.tasks if tasks else args.runs))
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            p.wait(timeout=60)
    if tasks:
        lines = [
            "# bench/retention: what the head keeps of the driver tasks it dropped",
            "",
            f"Machine: {common.machine()}.",
            f"Command: `bench/retention/run.py --tasks {args.tasks} --every {args.every}`: a "
            f"driver-mode head with one local pod; {args.tasks} x `atl.run(\"echo hi\")` from "
            f"a second driver, each waited for, 8 at a time ({wall:.0f} s).",
            "",
        ]
    else:
        lines = [
            "# bench/retention: what the head keeps of the debug runs it dropped",
            "",
            f"Machine: {common.machine()}.",
            f"Command: `bench/retention/run.py --runs {args.runs} --every {args.every}`: one "
            f"head, {PODS} simulated pods x {RANKS} ranks (`workernode --simulate "
            f"--fake-ranks`), {args.runs} x `atlctl run -f -r all echo hi` ({wall:.0f} s).",
            "",
        ]
    lines += [
        "| %s | head RSS (MiB) | files in logs/ | `atl_log_bytes_total` series | /metrics bytes "
        "| scrape (s) |" % ("tasks" if tasks else "runs"),
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for i, rss, nfiles, series, size, took in rows:
        lines.append(f"| {i} | {rss:.1f} | {nfiles} | {series} | {size} | {took:.3f} |")
    lines += [
        "",
        "The history keeps at most 10,000 finished tasks; a dropped task's log file, link,"
        " `.times` and series go with its record." if tasks else
        "The history keeps at most 10,000 ended runs and 20,000 rank records (here ~39 runs of"
        " 512 ranks); a dropped run's log files, links, `.times` and series go with its record.",
    ]
    path = os.path.join(common.ROOT, "bench", "results",
                        "retention-tasks.md" if tasks else "retention.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
