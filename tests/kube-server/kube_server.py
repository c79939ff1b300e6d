#!/usr/bin/python3
# kube_server.py: a local HTTPS stand-in for the Kubernetes API server that answers recorded responses, for tests.
"""
Run with Debian's /usr/bin/python3 (standard library only). Listens on 127.0.0.1 only.

    kube_server.py --certs DIR --responses DIR [--token T] [--port 0] [--mode normal]
                   [--lifetime 60] [--log FILE] [--basic USER:PASS]

Once listening it prints the port number on a line of its own on stdout (useful with --port 0)
and flushes. It exits by itself after --lifetime seconds (SIGALRM), whatever it is doing.

Certificates: --certs DIR holds what make-certs.sh writes: server.crt/server.key are served, and
client certificates signed by ca.crt are accepted (--cert, --key, --client-ca override them).

Authentication (checked first, in every mode but "hang"): a request passes with
`Authorization: Bearer <token>` equal to --token, with a client certificate signed by the CA,
or with basic auth equal to --basic. Otherwise: 401 with the API's Status object
{"kind":"Status","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}.

Modes (--mode):
  normal  answer from the responses folder (below)
  hang    accept the connection, complete the TLS handshake, read the request, never answer
  500     answer every authenticated request with 500 and an InternalError Status
  401     answer every request with 401 Unauthorized, whatever the credentials

Responses: GET <path>?<query> is answered with the file
    <responses>/<path without the leading "/">[?<canonical query>].json
where the canonical query is the query's parameters, percent-decoded, sorted by name (then value),
written as name=value and joined with "&", with "/" in them written as "%2F". Examples:
    /api/v1/nodes/gpu-1                                  -> api/v1/nodes/gpu-1.json
    /api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-1     -> api/v1/pods?fieldSelector=spec.nodeName=gpu-1.json
    /api/v1/namespaces/gpu-operator/pods?labelSelector=app%3Dx&fieldSelector=spec.nodeName%3Dn
        -> api/v1/namespaces/gpu-operator/pods?fieldSelector=spec.nodeName=n&labelSelector=app=x.json
The file is sent as it is with 200, except a Status object ("kind": "Status") with an integer
"code", which is sent with that code (to record 403s and the like). A missing file answers 404
with a NotFound Status, as the API server does. Paths with ".." segments are refused (400).
"""

import argparse
import http.server
import json
import os
import re
import signal
import ssl
import sys
import threading
import time
import urllib.parse

HOST = "127.0.0.1"  # never anything else


def status_body(code, reason, message, details=None):
    """Returns the bytes of a Kubernetes metav1.Status object."""
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code}
    if details:
        s["details"] = details
    return json.dumps(s).encode()


def canonical_file(root, raw_path):
    """Returns the recorded response file for a request path (with query), or None if unsafe."""
    u = urllib.parse.urlsplit(raw_path)
    path = urllib.parse.unquote(u.path)
    segs = [s for s in path.split("/") if s]
    if any(s in (".", "..") for s in segs) or "\0" in path:
        return None
    rel = "/".join(segs)
    if u.query:
        params = sorted(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        q = "&".join("%s=%s" % (k, v) for k, v in params).replace("/", "%2F")
        rel += "?" + q
    return os.path.join(root, rel + ".json")


def not_found_body(raw_path):
    """Returns a NotFound Status as the API server words it for the path."""
    path = urllib.parse.urlsplit(raw_path).path
    m = re.fullmatch(r"/api(?:s/[^/]+)?/[^/]+(?:/namespaces/[^/]+)?/([^/]+)/([^/]+)", path)
    if m:
        kind, name = m.group(1), urllib.parse.unquote(m.group(2))
        return status_body(404, "NotFound", '%s "%s" not found' % (kind, name),
                           {"name": name, "kind": kind})
    return status_body(404, "NotFound", "the server could not find the requested resource")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-server-test"
    timeout = 10  # an idle connection does not pin a thread for long

    def setup(self):
        super().setup()
        # the TLS handshake runs here, in the connection's thread, not in accept()
        self.request.do_handshake()

    def log_message(self, fmt, *args):
        pass

    def send_body(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def authenticated(self):
        """Returns how the request authenticated ("bearer", "cert", "basic"), or None."""
        cfg = self.server.cfg
        auth = self.headers.get("Authorization", "")
        if cfg.token and auth == "Bearer " + cfg.token:
            return "bearer"
        if cfg.basic:
            import base64
            if auth == "Basic " + base64.b64encode(cfg.basic.encode()).decode():
                return "basic"
        try:
            if self.request.getpeercert():
                return "cert"
        except (ValueError, AttributeError):
            pass
        return None

    def log_request_line(self, how, code):
        cfg = self.server.cfg
        if not cfg.log:
            return
        with self.server.log_lock, open(cfg.log, "a") as f:
            f.write("%s %s auth=%s host=%s code=%s\n" % (self.command, self.path, how or "none",
                                                        self.headers.get("Host", ""), code))

    def do_GET(self):
        cfg = self.server.cfg
        if cfg.mode == "hang":
            self.log_request_line(None, "hang")
            time.sleep(cfg.lifetime + 1)  # SIGALRM ends the process first
            return
        how = self.authenticated()
        if cfg.mode == "401" or how is None:
            self.log_request_line(how, 401)
            self.send_body(401, status_body(401, "Unauthorized", "Unauthorized"))
            return
        if cfg.mode == "500":
            self.log_request_line(how, 500)
            self.send_body(500, status_body(500, "InternalError",
                                            "Internal error occurred: kube_server.py mode 500"))
            return
        path = canonical_file(cfg.responses, self.path)
        if path is None:
            self.log_request_line(how, 400)
            self.send_body(400, status_body(400, "BadRequest", "bad path"))
            return
        try:
            with open(path, "rb") as f:
                body = f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            self.log_request_line(how, 404)
            self.send_body(404, not_found_body(self.path))
            return
        code = 200
        try:
            j = json.loads(body)
            if isinstance(j, dict) and j.get("kind") == "Status" and isinstance(j.get("code"), int):
                code = j["code"]
        except ValueError:
            pass
        self.log_request_line(how, code)
        self.send_body(code, body)

    def do_POST(self):
        self.send_body(405, status_body(405, "MethodNotAllowed", "read-only test server"))

    do_PUT = do_PATCH = do_DELETE = do_POST


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # failed handshakes and dropped connections are part of the tests


def main():
    ap = argparse.ArgumentParser(description="Local HTTPS stand-in for the Kubernetes API (tests only).")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one; printed)")
    ap.add_argument("--certs", help="folder written by make-certs.sh")
    ap.add_argument("--cert", help="server certificate (default CERTS/server.crt)")
    ap.add_argument("--key", help="server key (default CERTS/server.key)")
    ap.add_argument("--client-ca", help="CA accepted for client certificates (default CERTS/ca.crt)")
    ap.add_argument("--responses", default=".", help="folder of recorded responses")
    ap.add_argument("--token", default="", help="the bearer token accepted")
    ap.add_argument("--basic", default="", help="USER:PASS accepted as basic auth")
    ap.add_argument("--mode", choices=["normal", "hang", "500", "401"], default="normal")
    ap.add_argument("--lifetime", type=int, default=60, help="seconds before the server exits by itself")
    ap.add_argument("--log", help="append a line per request to this file (never the credentials)")
    cfg = ap.parse_args()

    if cfg.lifetime <= 0 or cfg.lifetime > 3600:
        ap.error("--lifetime must be 1..3600 seconds")
    cert = cfg.cert or (cfg.certs and os.path.join(cfg.certs, "server.crt"))
    key = cfg.key or (cfg.certs and os.path.join(cfg.certs, "server.key"))
    client_ca = cfg.client_ca or (cfg.certs and os.path.join(cfg.certs, "ca.crt"))
    if not cert or not key:
        ap.error("--certs or --cert and --key are needed")

    # the bounded lifetime comes first: whatever happens next, the process ends
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(cfg.lifetime)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    if client_ca and os.path.exists(client_ca):
        ctx.load_verify_locations(client_ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL

    srv = Server((HOST, cfg.port), Handler)
    srv.cfg = cfg
    srv.log_lock = threading.Lock()
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
