#!/usr/bin/python3
# kube_server.py: a local HTTPS stand-in for the Kubernetes API server that answers recorded responses, for tests.
"""
Run with Debian's /usr/bin/python3 (standard library only). Listens on 127.0.0.1 only.

    kube_server.py --certs DIR --responses DIR [--token T] [--port 0] [--mode normal]
                   [--lifetime 60] [--log FILE] [--basic USER:PASS] [--writes normal]
                   [--cluster FILE] [--continue-ttl 300]

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

Writes (what an agent does; in mode "normal"). Objects written are kept in memory, the first time
loaded from the responses folder, and later GETs answer the stored object:
  PATCH /api/v1/nodes/NAME/status   the status subresource: only "status" changes
  PATCH /api/v1/nodes/NAME          everything but "status" changes (spec.taints, labels...)
      Content-Type application/strategic-merge-patch+json: status.conditions and status.addresses
      merge by "type" (an item replaces/merges the one of that type, others stay; an item with
      "$patch": "delete" removes it; "$retainKeys" and "$setElementOrder/..." are ignored); every
      other list (spec.taints: no patchMergeKey) is replaced as a whole; maps merge, null deletes.
      application/merge-patch+json: RFC 7386. application/json-patch+json: RFC 6902 (add, remove,
      replace, move, copy, test; a failed "test" or a bad pointer answers 422 Invalid). Another
      type answers 415, a body that is not JSON 400. A node that is not in the folder answers 404.
  POST  /api/v1/namespaces/NS/events        creates (201); metadata.name, else generateName plus
      5 characters; 409 AlreadyExists when the name exists.
  PATCH /api/v1/namespaces/NS/events/NAME   the three patch types as above (404 if absent)
  GET   /api/v1/namespaces/NS/events[/NAME] the events written (a recorded file wins when present)
  GET   /api/v1/nodes[?labelSelector=...]   a NodeList of the folder's nodes (api/v1/nodes/*.json
      that are Node objects) as now stored, filtered by the selector: k=v, k==v, k!=v, k, !k,
      k in (a,b), k notin (a,b), comma-separated (all must hold). A recorded file for the exact
      request still wins.
Every successful write gives the object a new metadata.resourceVersion (one counter for the whole
server). A patch whose result carries a metadata.resourceVersion other than the stored one (a
merge patch with a stale one, say) answers 409 Conflict ("the object has been modified; please
apply your changes to the latest version and try again"), as optimistic concurrency does.

A whole cluster (--cluster FILE, a JSON object from tests/cluster/make_cluster.py): {"nodes": [...],
"pods": [...], "events": [...], "services": [...], "storageclasses": [...], "csidrivers": [...],
"csinodes": [...], "runtimeclasses": [...], "servicemonitors": [...]} (a key that is absent: that
resource is not served, 404, as a CRD that is not installed). Served from memory, before the
responses folder, as the API server lists them:
  GET /api/v1/nodes, /api/v1/pods, /api/v1/namespaces/NS/pods (and events, services),
      /apis/storage.k8s.io/v1/{storageclasses,csidrivers,csinodes}, /apis/node.k8s.io/v1/runtimeclasses,
      /apis/monitoring.coreos.com/v1/servicemonitors, and each object by name
    sorted by namespace/name; labelSelector as above; fieldSelector k=v, k==v, k!=v, comma-separated,
    on the fields the real API supports for that resource (pods: metadata.name, metadata.namespace,
    spec.nodeName, spec.restartPolicy, spec.schedulerName, spec.serviceAccountName, status.phase,
    status.podIP, status.nominatedNodeName; nodes: metadata.name, spec.unschedulable; events:
    involvedObject.*, reason, reportingComponent, source, type; others metadata.name/namespace), any
    other answering 400 "field label not supported: F"; limit and continue: a page of at most limit
    items, metadata.continue (base64 of {"rv", "start", "page", "t"}) and remainingItemCount while more
    remain; a continue token older than --continue-ttl seconds (default 300) answers 410 Expired with
    the API's message.
  GET /api, /apis, /api/v1, /apis/GROUP/VERSION  legacy discovery of the resources served (what kubectl
    asks before a list)
  GET /api/v1/namespaces/NS/pods/NAME[:PORT]/proxy/PATH  the pod proxy: an HTTP GET of
    http://<status.podIP>:<PORT, else the first containerPort>/PATH, its status and body passed on;
    503 ServiceUnavailable ("error trying to reach service: ...") when nothing answers there, 404
    for a pod that does not exist.
  POST /_control {"lists": {"forbid": ["nodes", ...], "hang_after_pages": N, "expire": "never"|"once"|"always"}}
    forbid: listing those resources answers 403 with the API's words (User "system:serviceaccount:
    gpunode:gpunode" cannot list resource "nodes" in API group "" at the cluster scope); hang_after_pages:
    a list's page N+1 and later never answer (a timeout part-way); expire: continue tokens answer 410
    Expired (once: the next one only); "repeat_continue": true answers every continued page with the
    token it was sent, as a broken proxy might; "cycle_continue": true answers the second continued
    page and later ones with the token the first page answered (A -> B -> A -> B ...). Answers
    {"lists": ...}.

Controls (no authentication; for the tests that drive an agent against one running server):
  POST /_control {"writes": W, "down_seconds": N}  sets how writes (PATCH, POST) are answered:
      normal    as above
      403       a Forbidden Status naming the verb and resource as the real API words it:
                nodes "n1" is forbidden: User "system:serviceaccount:gpunode:gpunode" cannot
                patch resource "nodes/status" in API group "" at the cluster scope
      409-once  the next write answers 409 Conflict, later ones normally
      500       an InternalError Status
      hang      never answer (the client's timeout must end it)
      garbage   200 with a body that is not JSON
      huge      200 with a 20 MiB JSON body
      down      the whole server goes away for N seconds (default 5): the listening socket is
                closed (connections are refused), open connections are closed without an
                answer, then it listens on the same port again with writes back to normal
    Answers {"writes": W}. Also --writes W at start (not "down").
  GET /_control   {"writes": W, "requests": [the request log entries so far]}
  POST /_reset    forgets the written objects and the request log, writes back to normal

Request log (--log FILE): one JSON object a line per request, appended and flushed as it is
answered: {"method", "path" (percent-decoded, no query), "query" (an object: parameter ->
value, decoded), "content_type", "body" (the request body parsed as JSON; the text if it is not
JSON; null without one), "status" (the HTTP code sent, or "hang"/"down"), "auth" ("bearer",
"cert", "basic" or null; never the credentials), "host"}. Control requests are not logged.
"""

import argparse
import copy
import http.server
import json
import os
import random
import re
import signal
import socket
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

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


# ---- patches ----

class PatchError(Exception):
    """A patch that cannot be applied: answered 422 Invalid with the message."""


# Lists that strategic merge patches merge item by item (patchMergeKey in the API types), by the
# path of field names that leads to them; every other list is replaced as a whole (spec.taints).
MERGE_KEYS = {("status", "conditions"): "type", ("status", "addresses"): "type"}


def merge_patch(target, patch):
    """Returns target with the RFC 7386 merge patch applied (target is not changed)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge(target, patch, path=()):
    """Returns target with a strategic merge patch applied (target is not changed)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$"):  # $retainKeys, $setElementOrder/<list>, $deleteFromPrimitiveList/...
            continue
        if v is None:
            out.pop(k, None)
            continue
        sub = path + (k,)
        key = MERGE_KEYS.get(sub)
        if isinstance(v, dict) and v.get("$patch") == "delete":
            out.pop(k, None)
        elif key and isinstance(v, list):
            out[k] = merge_list(out.get(k), v, key, sub)
        elif isinstance(v, dict):
            out[k] = strategic_merge(out.get(k), v, sub)
        else:
            out[k] = copy.deepcopy(v)
    return out


def merge_list(target, patch, key, path):
    """Returns the list target with the patch's items merged by key (strategic merge)."""
    items = copy.deepcopy(target) if isinstance(target, list) else []
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    for p in patch:
        if not isinstance(p, dict) or key not in p:
            raise PatchError("%s: an item without the merge key \"%s\"" % (".".join(path), key))
        at = next((i for i, t in enumerate(items) if isinstance(t, dict) and t.get(key) == p[key]), None)
        if p.get("$patch") == "delete":
            if at is not None:
                del items[at]
        elif at is None:
            items.append(strategic_merge({}, p, path))
        else:
            items[at] = strategic_merge(items[at], p, path)
    return items


def pointer(doc, ptr):
    """Returns (parent, last token) for an RFC 6901 pointer into doc; raises PatchError."""
    if ptr == "":
        return None, None
    if not ptr.startswith("/"):
        raise PatchError("path %r does not start with /" % ptr)
    toks = [t.replace("~1", "/").replace("~0", "~") for t in ptr[1:].split("/")]
    cur = doc
    for t in toks[:-1]:
        if isinstance(cur, dict) and t in cur:
            cur = cur[t]
        elif isinstance(cur, list) and t.isdigit() and int(t) < len(cur):
            cur = cur[int(t)]
        else:
            raise PatchError("path %r does not exist" % ptr)
    return cur, toks[-1]


def ptr_get(doc, ptr):
    """Returns the value at ptr; raises PatchError."""
    parent, t = pointer(doc, ptr)
    if parent is None and t is None:
        return doc
    if isinstance(parent, dict) and t in parent:
        return parent[t]
    if isinstance(parent, list) and t.isdigit() and int(t) < len(parent):
        return parent[int(t)]
    raise PatchError("path %r does not exist" % ptr)


def ptr_remove(doc, ptr):
    """Removes and returns the value at ptr; raises PatchError."""
    v = ptr_get(doc, ptr)
    parent, t = pointer(doc, ptr)
    if parent is None:
        raise PatchError("cannot remove the whole document")
    if isinstance(parent, dict):
        del parent[t]
    else:
        del parent[int(t)]
    return v


def ptr_add(doc, ptr, value):
    """Adds value at ptr (RFC 6902 add); returns the new document; raises PatchError."""
    parent, t = pointer(doc, ptr)
    if parent is None and t is None:
        return value
    if isinstance(parent, dict):
        parent[t] = value
    elif isinstance(parent, list):
        if t == "-":
            parent.append(value)
        elif t.isdigit() and int(t) <= len(parent):
            parent.insert(int(t), value)
        else:
            raise PatchError("index %r is out of range in %r" % (t, ptr))
    else:
        raise PatchError("path %r does not exist" % ptr)
    return doc


def json_patch(target, ops):
    """Returns target with the RFC 6902 operations applied (target is not changed); raises PatchError."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch is a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or not isinstance(op.get("path"), str):
            raise PatchError("an operation without a path")
        o, path = op.get("op"), op["path"]
        if o in ("add", "replace", "test") and "value" not in op:
            raise PatchError("%s %s: no value" % (o, path))
        if o == "add":
            doc = ptr_add(doc, path, copy.deepcopy(op["value"]))
        elif o == "remove":
            ptr_remove(doc, path)
        elif o == "replace":
            if path == "":
                doc = copy.deepcopy(op["value"])
            else:
                ptr_remove(doc, path)
                doc = ptr_add(doc, path, copy.deepcopy(op["value"]))
        elif o == "test":
            if ptr_get(doc, path) != op["value"]:
                raise PatchError("the test operation on %s failed: the value is not %s" % (path, json.dumps(op["value"])))
        elif o in ("move", "copy"):
            src = op.get("from")
            if not isinstance(src, str):
                raise PatchError("%s %s: no from" % (o, path))
            v = ptr_remove(doc, src) if o == "move" else copy.deepcopy(ptr_get(doc, src))
            doc = ptr_add(doc, path, v)
        else:
            raise PatchError("unknown operation %r" % o)
    return doc


PATCHERS = {
    "application/strategic-merge-patch+json": strategic_merge,
    "application/merge-patch+json": merge_patch,
    "application/json-patch+json": json_patch,
}


def split_selector(sel):
    """Returns the requirements of a label selector: commas outside parentheses split."""
    out, depth, cur = [], 0, ""
    for ch in sel:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def selector_matches(sel, labels):
    """Returns whether labels (a dict) satisfy the label selector sel (equality, existence, sets)."""
    for req in split_selector(sel or ""):
        m = re.fullmatch(r"(\S+)\s+(in|notin)\s*\((.*)\)", req)
        if m:
            vals = {v.strip() for v in m.group(3).split(",")}
            has = m.group(1) in labels and labels[m.group(1)] in vals
            if (m.group(2) == "in") != has:
                return False
        elif "!=" in req:
            k, v = (x.strip() for x in req.split("!=", 1))
            if labels.get(k) == v:
                return False
        elif "=" in req:
            k, v = (x.strip() for x in req.replace("==", "=").split("=", 1))
            if labels.get(k) != v:
                return False
        elif req.startswith("!"):
            if req[1:].strip() in labels:
                return False
        elif req not in labels:
            return False
    return True


# ---- the server's state ----

class State:
    """The objects written, the write mode and the request log (one lock for all)."""

    def __init__(self, writes="normal"):
        self.lock = threading.RLock()
        self.rv = 1000                 # the resourceVersion counter
        self.nodes = {}                # name -> node object, once read for a write
        self.events = {}               # (namespace, name) -> event object
        self.writes = writes
        self.down_until = 0.0
        self.requests = []
        self.lists = {"forbid": [], "hang_after_pages": 0, "expire": "never"}
        self.folder = None             # name -> node of the responses folder, read once

    def next_rv(self):
        self.rv += 1
        return str(self.rv)


def load_json_file(path):
    """Returns the JSON object in path, or None when absent or not an object."""
    try:
        with open(path, "rb") as f:
            j = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return j if isinstance(j, dict) else None


def is_node(j):
    return isinstance(j, dict) and j.get("kind", "Node") == "Node" and isinstance(j.get("metadata"), dict)


# ---- a whole cluster from one description (--cluster) ----

# collection path -> (resource, group, kind of the list, namespaced)
CLUSTER_RESOURCES = {
    "/api/v1/nodes": ("nodes", "", "NodeList", False),
    "/api/v1/pods": ("pods", "", "PodList", True),
    "/api/v1/events": ("events", "", "EventList", True),
    "/api/v1/services": ("services", "", "ServiceList", True),
    "/apis/storage.k8s.io/v1/storageclasses": ("storageclasses", "storage.k8s.io", "StorageClassList", False),
    "/apis/storage.k8s.io/v1/csidrivers": ("csidrivers", "storage.k8s.io", "CSIDriverList", False),
    "/apis/storage.k8s.io/v1/csinodes": ("csinodes", "storage.k8s.io", "CSINodeList", False),
    "/apis/node.k8s.io/v1/runtimeclasses": ("runtimeclasses", "node.k8s.io", "RuntimeClassList", False),
    "/apis/monitoring.coreos.com/v1/servicemonitors": ("servicemonitors", "monitoring.coreos.com", "ServiceMonitorList", True),
}
FIELD_LABELS = {
    "pods": {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
             "spec.serviceAccountName", "status.phase", "status.podIP", "status.nominatedNodeName"},
    "nodes": {"metadata.name", "spec.unschedulable"},
    "events": {"metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace",
               "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
               "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"},
}
EXPIRED_MESSAGE = ("The provided continue parameter is too old to display a consistent list result. You can start a new "
                   "list without the continue parameter, or use the continue token in this response to retrieve the "
                   "remainder of the results. Continuing with the provided token results in an inconsistent list - "
                   "objects that were created, modified, or deleted between the time the first chunk was returned and "
                   "now may show up in the list.")
PROXY_RE = re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/:]+)(?::([0-9]+))?/proxy(/.*)?")


def field_value(obj, field):
    """Returns an object's field as the API's field selectors see it ("" when absent)."""
    if field == "source":
        field = "source.component"
    cur = obj
    for part in field.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(resource, sel):
    """Returns [(field, op, value)] of a field selector; raises ValueError naming an unsupported field."""
    out = []
    for req in [r.strip() for r in (sel or "").split(",") if r.strip()]:
        m = re.fullmatch(r"([^!=]+)(==|!=|=)(.*)", req)
        if not m:
            raise ValueError("invalid field selector: %s" % req)
        f, op, v = m.group(1).strip(), m.group(2), m.group(3).strip()
        if f not in FIELD_LABELS.get(resource, {"metadata.name", "metadata.namespace"}):
            raise ValueError("field label not supported: %s" % f)
        out.append((f, "!=" if op == "!=" else "=", v))
    return out


class Cluster:
    """A cluster's objects, sorted as the API lists them, each serialised once."""

    def __init__(self, path):
        with open(path) as f:
            desc = json.load(f)
        self.objs = {}   # resource -> list of (key, obj, bytes)
        self.byname = {}  # (resource, namespace or "", name) -> obj
        for col, (res, _, _, namespaced) in CLUSTER_RESOURCES.items():
            if res not in desc:
                continue
            items = []
            for o in desc[res]:
                meta = o.setdefault("metadata", {})
                ns = meta.get("namespace", "default") if namespaced else ""
                if namespaced:
                    meta["namespace"] = ns
                key = ns + "/" + meta.get("name", "")
                items.append((key, o, json.dumps(o, separators=(",", ":")).encode()))
                self.byname[(res, ns, meta.get("name", ""))] = o
            items.sort(key=lambda t: t[0])
            self.objs[res] = items
        self.rv = str(desc.get("resourceVersion", 5000))


NODE_RE = re.compile(r"/api/v1/nodes/([^/]+)(/status)?")
EVENTS_RE = re.compile(r"/api/v1/namespaces/([^/]+)/events(?:/([^/]+))?")
FORBIDDEN_USER = "system:serviceaccount:gpunode:gpunode"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-server-test"
    timeout = 10  # an idle connection does not pin a thread for long

    def setup(self):
        super().setup()
        # as the Go API server: no Nagle, or each answer's header and body writes wait for a delayed ACK (40 ms)
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # the TLS handshake runs here, in the connection's thread, not in accept()
        self.request.do_handshake()

    def log_message(self, fmt, *args):
        pass

    def send_body(self, code, body):
        self.sent = code
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, code, obj):
        self.send_body(code, json.dumps(obj).encode())

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

    def log_request_entry(self, how, code):
        """Appends the request to the log (memory, and --log FILE as a JSON line)."""
        u = urllib.parse.urlsplit(self.path)
        query = {}
        for k, v in urllib.parse.parse_qsl(u.query, keep_blank_values=True):
            query[k] = v if k not in query else (query[k] if isinstance(query[k], list) else [query[k]]) + [v]
        body = None
        if self.raw_body:
            try:
                body = json.loads(self.raw_body)
            except ValueError:
                body = self.raw_body.decode("utf-8", "replace")
        entry = {"method": self.command, "path": urllib.parse.unquote(u.path), "query": query,
                 "content_type": self.headers.get("Content-Type"), "body": body, "status": code,
                 "auth": how, "host": self.headers.get("Host", "")}
        st = self.server.state
        with st.lock:
            st.requests.append(entry)
            if self.server.cfg.log:
                with open(self.server.cfg.log, "a") as f:
                    f.write(json.dumps(entry) + "\n")

    def drop_connection(self):
        """Closes the connection without an answer (the server is down)."""
        self.close_connection = True
        try:
            self.request.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > (16 << 20):
            return None
        return self.rfile.read(n) if n > 0 else b""

    def handle_any(self):
        cfg, st = self.server.cfg, self.server.state
        self.sent = None
        self.raw_body = b""
        if self.command in ("POST", "PATCH", "PUT"):
            self.raw_body = self.read_body()
            if self.raw_body is None:
                self.raw_body = b""
                self.send_body(413, status_body(413, "RequestEntityTooLarge", "request body too large"))
                return
        if time.monotonic() < st.down_until:
            self.log_request_entry(None, "down")
            self.drop_connection()
            return
        path = urllib.parse.urlsplit(self.path).path
        if path in ("/_control", "/_reset"):
            self.control(path)
            return
        if cfg.mode == "hang":
            self.log_request_entry(None, "hang")
            time.sleep(cfg.lifetime + 1)  # SIGALRM ends the process first
            return
        how = self.authenticated()
        if cfg.mode == "401" or how is None:
            self.send_body(401, status_body(401, "Unauthorized", "Unauthorized"))
        elif cfg.mode == "500":
            self.send_body(500, status_body(500, "InternalError",
                                            "Internal error occurred: kube_server.py mode 500"))
        elif self.command == "GET":
            self.get()
        elif self.command in ("PATCH", "POST"):
            if self.write_mode() is not None:
                return
            self.write()
        else:
            self.send_body(405, status_body(405, "MethodNotAllowed", "%s is not served here" % self.command))
        if self.sent is not None:
            self.log_request_entry(how, self.sent)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

    # ---- controls ----

    def control(self, path):
        st = self.server.state
        if path == "/_reset" and self.command == "POST":
            with st.lock:
                st.nodes.clear()
                st.events.clear()
                st.requests.clear()
                st.writes = "normal"
                st.lists = {"forbid": [], "hang_after_pages": 0, "expire": "never"}
            self.send_json(200, {"writes": "normal"})
            return
        if self.command == "GET":
            with st.lock:
                self.send_json(200, {"writes": st.writes, "requests": list(st.requests)})
            return
        try:
            req = json.loads(self.raw_body or b"{}")
            if isinstance(req, dict) and "lists" in req:
                with st.lock:
                    st.lists.update(req["lists"])
                    self.send_json(200, {"lists": st.lists})
                return
            w = req.get("writes", st.writes)
            down = float(req.get("down_seconds", 5))
        except (ValueError, AttributeError, TypeError):
            self.send_body(400, status_body(400, "BadRequest", "the control body is not JSON"))
            return
        if w not in WRITE_MODES:
            self.send_body(400, status_body(400, "BadRequest", "writes must be one of %s" % ", ".join(WRITE_MODES)))
            return
        if w == "down":
            with st.lock:
                st.down_until = time.monotonic() + down
            self.send_json(200, {"writes": "down", "down_seconds": down})
            self.wfile.flush()
            self.close_connection = True
            threading.Thread(target=self.server.shutdown, daemon=True).start()
            return
        with st.lock:
            st.writes = w
        self.send_json(200, {"writes": w})

    def forbidden_message(self, verb, resource, name, namespace):
        what = '%s "%s"' % (resource.split("/")[0], name) if name else resource.split("/")[0]
        scope = 'in the namespace "%s"' % namespace if namespace else "at the cluster scope"
        return '%s is forbidden: User "%s" cannot %s resource "%s" in API group "" %s' % (
            what, FORBIDDEN_USER, verb, resource, scope)

    def target(self):
        """Returns (resource, name, namespace) of a write's path, or None."""
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        m = NODE_RE.fullmatch(path)
        if m:
            return ("nodes/status" if m.group(2) else "nodes"), m.group(1), None
        m = EVENTS_RE.fullmatch(path)
        if m:
            return "events", m.group(2), m.group(1)
        return None

    def write_mode(self):
        """Answers a write as the write mode says; returns None when it is to be done normally."""
        st = self.server.state
        with st.lock:
            w = st.writes
            if w == "409-once":
                st.writes = "normal"
        how = self.authenticated()
        t = self.target() or ("unknown", None, None)
        verb = "create" if self.command == "POST" else "patch"
        if w == "403":
            self.send_body(403, status_body(403, "Forbidden", self.forbidden_message(verb, t[0], t[1], t[2]),
                                            {"name": t[1] or "", "kind": t[0].split("/")[0]}))
        elif w == "409-once":
            self.send_body(409, self.conflict_body(t[0].split("/")[0], t[1] or ""))
        elif w == "500":
            self.send_body(500, status_body(500, "InternalError", "Internal error occurred: kube_server.py writes 500"))
        elif w == "hang":
            self.log_request_entry(how, "hang")
            time.sleep(self.server.cfg.lifetime + 1)
            return True
        elif w == "garbage":
            self.send_body(200, b"<html>this is not JSON\x00\xff</html>")
        elif w == "huge":
            self.send_body(200, b'{"kind":"Status","pad":"' + b"x" * (20 << 20) + b'"}')
        else:
            return None
        self.log_request_entry(how, self.sent)
        return True

    @staticmethod
    def conflict_body(kind, name):
        return status_body(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                           'please apply your changes to the latest version and try again' % (kind, name),
                           {"name": name, "kind": kind})

    # ---- reads ----

    def recorded(self):
        """Returns the recorded file's bytes for this GET, None when absent, False when unsafe."""
        path = canonical_file(self.server.cfg.responses, self.path)
        if path is None:
            return False
        try:
            with open(path, "rb") as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def send_recorded(self, body):
        code = 200
        try:
            j = json.loads(body)
            if isinstance(j, dict) and j.get("kind") == "Status" and isinstance(j.get("code"), int):
                code = j["code"]
        except ValueError:
            pass
        self.send_body(code, body)

    def get(self):
        st = self.server.state
        u = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(u.path)
        if self.server.cluster is not None and self.cluster_get(path, u.query):
            return
        m = NODE_RE.fullmatch(path)
        with st.lock:
            if m and m.group(1) in st.nodes:
                self.send_json(200, st.nodes[m.group(1)])
                return
            e = EVENTS_RE.fullmatch(path)
            if e and e.group(2) and (e.group(1), e.group(2)) in st.events:
                self.send_json(200, st.events[(e.group(1), e.group(2))])
                return
        body = self.recorded()
        if body is False:
            self.send_body(400, status_body(400, "BadRequest", "bad path"))
            return
        if body is not None:
            self.send_recorded(body)
            return
        q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        if path == "/api/v1/nodes":
            self.node_list(q)
            return
        if e and not e.group(2):
            with st.lock:
                items = [v for (ns, _), v in sorted(st.events.items()) if ns == e.group(1)]
                self.send_json(200, {"kind": "EventList", "apiVersion": "v1",
                                     "metadata": {"resourceVersion": str(st.rv)}, "items": items})
            return
        self.send_body(404, not_found_body(self.path))

    # ---- the cluster (--cluster) ----

    def cluster_get(self, path, query):
        """Answers a GET from the cluster description; returns False when it is not about one."""
        cl = self.server.cluster
        st = self.server.state
        m = PROXY_RE.fullmatch(path)
        if m:
            self.proxy(m.group(1), m.group(2), m.group(3), m.group(4) or "/", query)
            return True
        disc = self.discovery(path)
        if disc is not None:
            self.send_json(200, disc)
            return True
        ns = None
        col = path
        mm = re.fullmatch(r"(/api/v1|/apis/[^/]+/[^/]+)/namespaces/([^/]+)/([^/]+)(?:/([^/]+))?", path)
        name = None
        if mm:
            col, ns, name = mm.group(1) + "/" + mm.group(3), mm.group(2), mm.group(4)
        else:
            mm = re.fullmatch(r"(/api/v1|/apis/[^/]+/[^/]+)/([^/]+)/([^/]+)", path)
            if mm and mm.group(1) + "/" + mm.group(2) in CLUSTER_RESOURCES:
                col, name = mm.group(1) + "/" + mm.group(2), mm.group(3)
        spec = CLUSTER_RESOURCES.get(col)
        if spec is None:
            return False
        res, group, kind, namespaced = spec
        if res not in cl.objs:
            self.send_body(404, status_body(404, "NotFound", "the server could not find the requested resource"))
            return True
        if name is not None:
            o = cl.byname.get((res, ns or "", name))
            if o is None:
                self.send_body(404, status_body(404, "NotFound", '%s "%s" not found' % (res, name), {"name": name, "kind": res}))
            else:
                self.send_json(200, o)
            return True
        with st.lock:
            lists = dict(st.lists)
        if res in lists.get("forbid", []):
            scope = 'in the namespace "%s"' % ns if ns else "at the cluster scope"
            self.send_body(403, status_body(403, "Forbidden", '%s is forbidden: User "%s" cannot list resource "%s" in API group '
                                            '"%s" %s' % (res, FORBIDDEN_USER, res, group, scope), {"kind": res}))
            return True
        q = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        try:
            fields = parse_field_selector(res, q.get("fieldSelector"))
        except ValueError as ex:
            self.send_body(400, status_body(400, "BadRequest", str(ex)))
            return True
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            limit = 0
        start, page = "", 0
        cont = q.get("continue")
        if cont:
            try:
                tok = json.loads(__import__("base64").b64decode(cont))
                start, page, issued = tok["start"], int(tok["page"]), float(tok["t"])
            except (ValueError, KeyError, TypeError):
                self.send_body(400, status_body(400, "BadRequest", "continue key is not valid: illegal base64 data"))
                return True
            expire = lists.get("expire", "never")
            if expire in ("once", "always") or time.time() - issued > self.server.cfg.continue_ttl:
                if expire == "once":
                    with st.lock:
                        st.lists["expire"] = "never"
                self.send_body(410, status_body(410, "Expired", EXPIRED_MESSAGE))
                return True
            hang = int(lists.get("hang_after_pages") or 0)
            if hang and page >= hang:
                self.log_request_entry(self.authenticated(), "hang")
                time.sleep(self.server.cfg.lifetime + 1)
                return True
        items = cl.objs[res]
        import bisect
        i = bisect.bisect_left(items, (start,)) if start else 0
        out, nxt = [], None
        sel = q.get("labelSelector")
        while i < len(items):
            key, o, raw = items[i]
            i += 1
            if ns is not None and o["metadata"].get("namespace") != ns:
                continue
            if sel and not selector_matches(sel, o["metadata"].get("labels") or {}):
                continue
            if any((field_value(o, f) == v) != (op == "=") for f, op, v in fields):
                continue
            if limit and len(out) == limit:
                nxt = key
                break
            out.append(raw)
        meta = {"resourceVersion": cl.rv}
        if nxt is not None:
            meta["continue"] = __import__("base64").b64encode(json.dumps(
                {"v": "meta.k8s.io/v1", "rv": int(cl.rv), "start": nxt, "page": page + 1, "t": time.time()}).encode()).decode()
        if cont and lists.get("repeat_continue"):
            meta["continue"] = cont  # a broken server or proxy: the token it was sent, again
        self.cycle_token(meta, cont, page)
        head = json.dumps({"kind": kind, "apiVersion": "v1" if col.startswith("/api/") else col.split("/")[2] + "/" + col.split("/")[3],
                           "metadata": meta})[:-1].encode()
        self.send_body(200, head + b',"items":[' + b",".join(out) + b"]}")
        return True

    def cycle_token(self, meta, cont, page):
        """With the cycle_continue control: the first page's token is remembered, and every continued page
        after the first answers it again (A -> B -> A), as a broken proxy might."""
        st = self.server.state
        with st.lock:
            if not st.lists.get("cycle_continue"):
                return
            if not cont and meta.get("continue"):
                st.lists["_first_token"] = meta["continue"]
            elif cont and page >= 2 and st.lists.get("_first_token"):
                meta["continue"] = st.lists["_first_token"]

    def discovery(self, path):
        """Returns the legacy discovery document for path (/api, /apis, /api/v1, /apis/G/V), or None: what
        kubectl asks before a list."""
        cl = self.server.cluster
        served = [(col, spec) for col, spec in CLUSTER_RESOURCES.items() if spec[0] in cl.objs]
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
        gvs = sorted({col.rsplit("/", 1)[0] for col, _ in served if col.startswith("/apis/")})
        if path == "/apis":
            groups = []
            for gv in gvs:
                g, v = gv.split("/")[2:4]
                groups.append({"name": g, "versions": [{"groupVersion": g + "/" + v, "version": v}],
                               "preferredVersion": {"groupVersion": g + "/" + v, "version": v}})
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        if path == "/api/v1" or path in gvs:
            resources = []
            for col, (res, _, kind, namespaced) in served:
                if col.rsplit("/", 1)[0] != path:
                    continue
                resources.append({"name": res, "singularName": kind[:-4].lower(), "namespaced": namespaced,
                                  "kind": kind[:-4], "verbs": ["get", "list"]})
            return {"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": "v1" if path == "/api/v1" else path[len("/apis/"):], "resources": resources}
        return None

    def proxy(self, ns, name, port, subpath, query):
        """The pod proxy: GET http://podIP:port/subpath, its answer passed on."""
        o = self.server.cluster.byname.get(("pods", ns, name))
        if o is None:
            self.send_body(404, status_body(404, "NotFound", 'pods "%s" not found' % name, {"name": name, "kind": "pods"}))
            return
        ip = (o.get("status") or {}).get("podIP")
        if not port:
            for c in (o.get("spec") or {}).get("containers", []):
                for p in c.get("ports", []):
                    port = port or p.get("containerPort")
        url = "http://%s:%s%s%s" % (ip, port, subpath, "?" + query if query else "")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                self.send_body(r.status, r.read())
        except urllib.error.HTTPError as ex:
            self.send_body(ex.code, ex.read())
        except (OSError, ValueError) as ex:
            self.send_body(503, status_body(503, "ServiceUnavailable", "error trying to reach service: dial tcp %s:%s: %s" %
                                            (ip, port, getattr(ex, "reason", ex))))

    def folder_nodes(self):
        """Returns {name: node} of the folder's Node files, read once (a test may put thousands there)."""
        st = self.server.state
        with st.lock:
            if st.folder is None:
                d = os.path.join(self.server.cfg.responses, "api", "v1", "nodes")
                st.folder = {}
                try:
                    names = [f[:-5] for f in os.listdir(d) if f.endswith(".json") and "?" not in f]
                except OSError:
                    names = []
                for n in names:
                    node = load_json_file(os.path.join(d, n + ".json"))
                    if is_node(node):
                        st.folder[n] = node
            return st.folder

    def node_list(self, q):
        """Answers a NodeList of the folder's nodes as now stored, filtered by the labelSelector and paged
        (limit, continue) as the API server pages."""
        st = self.server.state
        selector = q.get("labelSelector")
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            limit = 0
        folder = self.folder_nodes()
        with st.lock:
            lists = dict(st.lists)
            names = sorted(set(folder) | set(st.nodes))
            rv = str(st.rv)
        start, page = "", 0
        cont = q.get("continue")
        if cont:
            import base64
            try:
                tok = json.loads(base64.b64decode(cont))
                start, page, issued = tok["start"], int(tok["page"]), float(tok["t"])
            except (ValueError, KeyError, TypeError):
                self.send_body(400, status_body(400, "BadRequest", "continue key is not valid: illegal base64 data"))
                return
            expire = lists.get("expire", "never")
            if expire in ("once", "always") or time.time() - issued > self.server.cfg.continue_ttl:
                if expire == "once":
                    with st.lock:
                        st.lists["expire"] = "never"
                self.send_body(410, status_body(410, "Expired", EXPIRED_MESSAGE))
                return
        items, nxt, remaining = [], None, 0
        with st.lock:
            for n in names:
                if start and n < start:
                    continue
                node = st.nodes.get(n) or folder.get(n)
                if not is_node(node) or not selector_matches(selector, node["metadata"].get("labels") or {}):
                    continue
                if limit and len(items) == limit:
                    if nxt is None:
                        nxt = n
                    remaining += 1
                    continue
                items.append(json.dumps(node, separators=(",", ":")))
        meta = {"resourceVersion": rv}
        if nxt is not None:
            import base64
            meta["continue"] = base64.b64encode(json.dumps(
                {"v": "meta.k8s.io/v1", "rv": int(rv), "start": nxt, "page": page + 1, "t": time.time()}).encode()).decode()
            meta["remainingItemCount"] = remaining
        if cont and lists.get("repeat_continue"):
            meta["continue"] = cont
        self.cycle_token(meta, cont, page)
        head = json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": meta})[:-1]
        self.send_body(200, (head + ',"items":[' + ",".join(items) + "]}").encode())

    # ---- writes ----

    def write(self):
        st = self.server.state
        t = self.target()
        if t is None or (t[0] == "events" and (self.command == "POST") != (t[1] is None)) or \
                (t[0] != "events" and self.command == "POST"):
            self.send_body(405, status_body(405, "MethodNotAllowed", "%s %s is not served here" % (self.command, self.path)))
            return
        try:
            body = json.loads(self.raw_body)
        except ValueError:
            self.send_body(400, status_body(400, "BadRequest", "the request body is not JSON"))
            return
        resource, name, ns = t
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        with st.lock:
            if self.command == "POST":
                self.create_event(ns, body)
                return
            patcher = PATCHERS.get(ctype)
            if patcher is None:
                self.send_body(415, status_body(415, "UnsupportedMediaType",
                                                "the body of the request was in an unknown format - accepted media types "
                                                "include: " + ", ".join(PATCHERS)))
                return
            if resource == "events":
                cur = st.events.get((ns, name))
            else:
                cur = st.nodes.get(name)
                if cur is None:
                    cur = load_json_file(os.path.join(self.server.cfg.responses, "api", "v1", "nodes", name + ".json"))
                    if not is_node(cur):
                        cur = None
                    elif not cur["metadata"].get("resourceVersion"):
                        cur["metadata"]["resourceVersion"] = st.next_rv()
            if cur is None:
                kind = resource.split("/")[0]
                self.send_body(404, status_body(404, "NotFound", '%s "%s" not found' % (kind, name),
                                                {"name": name, "kind": kind}))
                return
            try:
                new = patcher(cur, body)
            except PatchError as ex:
                kind = resource.split("/")[0]
                self.send_body(422, status_body(422, "Invalid", '%s "%s" is invalid: %s' % (kind, name, ex),
                                                {"name": name, "kind": kind}))
                return
            if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
                self.send_body(422, status_body(422, "Invalid", "the patched object has no metadata"))
                return
            rv = cur["metadata"].get("resourceVersion")
            nrv = new["metadata"].get("resourceVersion")
            if nrv is not None and nrv != rv:
                self.send_body(409, self.conflict_body(resource.split("/")[0], name))
                return
            if resource == "nodes/status":
                keep = copy.deepcopy(cur)
                keep["status"] = new.get("status", {})
                new = keep
            elif resource == "nodes":
                if "status" in cur:
                    new["status"] = copy.deepcopy(cur["status"])
                else:
                    new.pop("status", None)
            new["metadata"]["name"] = name
            new["metadata"]["resourceVersion"] = st.next_rv()
            if resource == "events":
                new["metadata"]["namespace"] = ns
                st.events[(ns, name)] = new
            else:
                st.nodes[name] = new
            self.send_json(200, new)

    def create_event(self, ns, obj):
        st = self.server.state
        if not isinstance(obj, dict):
            self.send_body(400, status_body(400, "BadRequest", "the request body is not a JSON object"))
            return
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            self.send_body(400, status_body(400, "BadRequest", "metadata is not an object"))
            return
        name = meta.get("name")
        if not name and meta.get("generateName"):
            name = meta["generateName"] + "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        if not name:
            self.send_body(422, status_body(422, "Invalid", "Event \"\" is invalid: metadata.name: Required value: "
                                            "name or generateName is required", {"kind": "Event"}))
            return
        if meta.get("namespace") not in (None, ns):
            self.send_body(400, status_body(400, "BadRequest", "the namespace of the provided object does not match "
                                            "the namespace sent on the request"))
            return
        if (ns, name) in st.events:
            self.send_body(409, status_body(409, "AlreadyExists", 'events "%s" already exists' % name,
                                            {"name": name, "kind": "events"}))
            return
        meta.update({"name": name, "namespace": ns, "resourceVersion": st.next_rv(),
                     "uid": "%08x-0000-4000-8000-%012x" % (st.rv, st.rv),
                     "creationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        obj.setdefault("kind", "Event")
        obj.setdefault("apiVersion", "v1")
        st.events[(ns, name)] = obj
        self.send_json(201, obj)


WRITE_MODES = ("normal", "403", "409-once", "500", "hang", "garbage", "huge", "down")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # failed handshakes and dropped connections are part of the tests


def listen(cfg, ctx, state, port):
    """Returns a Server listening on HOST:port with TLS."""
    srv = Server((HOST, port), Handler)
    srv.cfg = cfg
    srv.state = state
    srv.cluster = cfg.cluster_data
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    return srv


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
    ap.add_argument("--writes", choices=[w for w in WRITE_MODES if w != "down"], default="normal",
                    help="how writes are answered at start (POST /_control changes it)")
    ap.add_argument("--lifetime", type=int, default=60, help="seconds before the server exits by itself")
    ap.add_argument("--log", help="append a JSON line per request to this file (never the credentials)")
    ap.add_argument("--cluster", help="serve a whole cluster from this JSON description (lists paginated, the pod proxy)")
    ap.add_argument("--continue-ttl", type=float, default=300, help="seconds a continue token stays valid (default 300)")
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

    cfg.cluster_data = Cluster(cfg.cluster) if cfg.cluster else None
    state = State(cfg.writes)
    srv = listen(cfg, ctx, state, cfg.port)
    port = srv.server_address[1]
    print(port, flush=True)
    try:
        while True:
            srv.serve_forever(poll_interval=0.05)
            # POST /_control {"writes": "down"} stopped it: refuse connections for a while, then listen again
            srv.socket.close()
            while time.monotonic() < state.down_until:
                time.sleep(0.05)
            with state.lock:
                state.writes = "normal"
            for _ in range(100):
                try:
                    srv = listen(cfg, ctx, state, port)
                    break
                except OSError:
                    time.sleep(0.05)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
