#!/usr/bin/env python3
"""A slow "remote" dataset for scripts/device/newfindings.sh: serves a directory over HTTP on 127.0.0.1 and sleeps
--delay-ms before answering each request (a stand-in for object storage or a far-away file server). Threaded, so
requests in flight overlap as they would against a real server.

  python3 newfind_http.py --root DIR --port 8765 --delay-ms 20
"""
import argparse
import functools
import http.server
import time


class SlowHandler(http.server.SimpleHTTPRequestHandler):
    delay_s = 0.02

    def do_GET(self):  # noqa: N802 (the stdlib's name)
        time.sleep(self.delay_s)
        super().do_GET()

    def log_message(self, *_args):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--delay-ms", type=float, default=20)
    a = ap.parse_args()
    SlowHandler.delay_s = a.delay_ms / 1000
    handler = functools.partial(SlowHandler, directory=a.root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
