#!/usr/bin/python3
# metrics_server.py: serves a folder of recorded /metrics pages over plain HTTP on 127.0.0.1, for tests.
"""
    metrics_server.py --dir DIR [--port 0] [--lifetime 120]

GET /<path> answers DIR/<path> as text/plain; version=0.0.4 (404 when missing; ".." refused).
Prints the port on a line of its own once listening, and exits by itself after --lifetime seconds.
"""
import argparse
import http.server
import os
import signal
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        segs = [s for s in self.path.split("?", 1)[0].split("/") if s]
        body, code = b"not found\n", 404
        if segs and not any(s in (".", "..") for s in segs):
            try:
                with open(os.path.join(self.server.dir, *segs), "rb") as f:
                    body, code = f.read(), 200
            except OSError:
                pass
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    ap = argparse.ArgumentParser(description="Serve recorded metrics pages on 127.0.0.1 (tests only).")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--lifetime", type=int, default=120)
    cfg = ap.parse_args()
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(cfg.lifetime)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", cfg.port), Handler)
    srv.daemon_threads = True
    srv.dir = cfg.dir
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
