#!/usr/bin/env python3
"""One HTTP(S) request, its outcome as one JSON line, for tests that ask from
inside a network namespace: {"status", "location", "set_cookie", "body"} or
{"error": "..."} when no answer came (refused, unreachable, timed out).

usage: http_probe.py URL [--ca FILE] [--cookie C] [--method M] [--form BODY]"""
import argparse
import http.client
import json
import ssl
import sys
import urllib.parse


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--ca")
    p.add_argument("--cookie")
    p.add_argument("--method", default="GET")
    p.add_argument("--form")
    a = p.parse_args()
    u = urllib.parse.urlsplit(a.url)
    try:
        if u.scheme == "https":
            ctx = ssl.create_default_context(cafile=a.ca)
            ctx.check_hostname = False  # the job's certificate names no host
            conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)
        else:
            conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        headers = {}
        if a.cookie:
            headers["Cookie"] = a.cookie
        if a.form is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        target = u.path + ("?" + u.query if u.query else "")
        conn.request(a.method, target, body=a.form, headers=headers)
        r = conn.getresponse()
        body = r.read().decode("utf-8", "replace")
        print(json.dumps({"status": r.status, "location": r.getheader("Location", ""),
                          "set_cookie": r.getheader("Set-Cookie", ""), "body": body[:20000]}))
    except (OSError, http.client.HTTPException) as e:
        print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
