"""libatl.so's replacements of OpenSSL's calls (for its own CAF) hold in a
Python process, and a process that defeats them (libssl loaded RTLD_GLOBAL
before atl: a lookup from CAF then finds libssl's first) says so in one line
instead of running unprotected without a word."""
import os
import subprocess
import sys

LIBRARY = os.environ.get("ATL_LIBRARY")

# A client's actor system is made (then fails to reach a closed port): the
# check runs with it.
SCRIPT = r"""
import ctypes, os, sys
if sys.argv[1] == "global-libssl-first":
    ctypes.CDLL("libssl.so.3", mode=ctypes.RTLD_GLOBAL)
lib = ctypes.CDLL(os.environ["ATL_LIBRARY"])
lib.atl_connect.restype = ctypes.c_void_p
client = ctypes.c_void_p()
lib.atl_connect(b"127.0.0.1:1", None, 1, ctypes.byref(client))
print("made")
"""


def run(how):
    env = dict(os.environ, ATL_LIBRARY=LIBRARY)
    done = subprocess.run([sys.executable, "-c", SCRIPT, how], env=env, capture_output=True,
                          text=True, timeout=60)
    assert "made" in done.stdout, done.stderr
    return [line for line in done.stderr.splitlines() if line.startswith("atl: ")]


def test_libatl_in_a_plain_python_binds_every_replacement():
    assert run("plain") == []


def test_libssl_loaded_global_first_is_said_in_one_line():
    lines = run("global-libssl-first")
    assert len(lines) == 1, lines
    line = lines[0]
    assert "atl's SSL_read, SSL_write" in line, line
    assert "libcaf_openssl.so" in line and "calls go to libssl.so.3's instead" in line, line
    assert "the TLS fixes" in line and "RTLD_GLOBAL" in line, line
