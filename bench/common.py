"""Shared helpers for atl's benchmarks: where the binaries are, machine facts."""
import os
import platform
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("ATL_BIN_DIR", os.path.join(ROOT, "build", "bin"))


def binary(name):
    path = os.path.join(BIN, name)
    if not os.access(path, os.X_OK):
        raise SystemExit(f"{path} not found: build first (scripts/build.sh)")
    return path


def machine():
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return (f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, {platform.system()} "
            f"{platform.release()}, atl {commit}")


def median(xs):
    return statistics.median(xs)
