#!/usr/bin/python3
# run-krew-tests.py: the Krew plugin manifest (deploy/krew/gpunode.yaml) against Krew's rules, and the
# archive scripts/krew-package.sh makes from the built gpunode: its sha256 in the manifest, its bin inside.
"""usage: run-krew-tests.py SOURCE_ROOT GPUNODE

Krew's rules, as its index validation applies them (krew pkg/index/validation, v1alpha2): apiVersion
krew.googlecontainertools.github.com/v1alpha2, kind Plugin, no unknown fields (Krew decodes strictly),
metadata.name safe and equal to the file's name, spec.version a semantic version with a leading "v",
spec.shortDescription set, at least one platform, each with a selector (matchLabels or
matchExpressions), an http(s) uri, a sha256 of 64 lowercase hex digits, a relative bin without "..",
and files with from and to. Then scripts/krew-package.sh is run into a temporary folder: its manifest
passes the same rules, names the archive's sha256 and the version `gpunode --version` prints, the archive
holds the bin (mode 0755), and the bin, run, answers as kubectl-gpunode. Broken copies (a wrong sha256, no
selector, no bin, an unknown field) must be rejected, or the rules above prove nothing. Debian's python3
with python3-yaml (yamllint's dependency, in scripts/install-deps.sh)."""
import hashlib, os, re, subprocess, sys, tarfile, tempfile, copy

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harness as H  # noqa: E402

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml not installed")
    sys.exit(77)

source_root, gpunode = (os.path.abspath(a) for a in sys.argv[1:3])
check = H.check
TEMPLATE = os.path.join(source_root, "deploy", "krew", "gpunode.yaml")
FIELDS = {"": {"apiVersion", "kind", "metadata", "spec"}, "metadata": {"name", "namespace", "labels", "annotations"},
          "spec": {"version", "shortDescription", "description", "caveats", "homepage", "platforms"},
          "platform": {"selector", "uri", "sha256", "files", "bin"}, "file": {"from", "to"},
          "selector": {"matchLabels", "matchExpressions"}}
SEMVER = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


def problems(m, filename):
    """Returns the list of Krew rule violations in the manifest M (a parsed dict) read from FILENAME."""
    out = []

    def fields(obj, kind, where):
        if not isinstance(obj, dict):
            out.append("%s: not a mapping" % where)
            return False
        extra = set(obj) - FIELDS[kind]
        if extra:
            out.append("%s: unknown field(s) %s" % (where, ", ".join(sorted(extra))))
        return True

    if not fields(m, "", "manifest"):
        return out
    if m.get("apiVersion") != "krew.googlecontainertools.github.com/v1alpha2":
        out.append("apiVersion: %r" % m.get("apiVersion"))
    if m.get("kind") != "Plugin":
        out.append("kind: %r" % m.get("kind"))
    meta, spec = m.get("metadata") or {}, m.get("spec") or {}
    fields(meta, "metadata", "metadata")
    name = meta.get("name", "")
    if not re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", str(name)):
        out.append("metadata.name: %r is not a safe plugin name" % name)
    if name + ".yaml" != os.path.basename(filename):
        out.append("metadata.name %r does not match the file name %s" % (name, os.path.basename(filename)))
    if not fields(spec, "spec", "spec"):
        return out
    if not SEMVER.match(str(spec.get("version", ""))):
        out.append("spec.version: %r is not v<semver>" % spec.get("version"))
    if not spec.get("shortDescription"):
        out.append("spec.shortDescription: missing")
    plats = spec.get("platforms")
    if not isinstance(plats, list) or not plats:
        out.append("spec.platforms: none")
        return out
    for i, p in enumerate(plats):
        w = "spec.platforms[%d]" % i
        if not fields(p, "platform", w):
            continue
        sel = p.get("selector")
        if not sel or not fields(sel, "selector", w + ".selector") or not (sel.get("matchLabels") or sel.get("matchExpressions")):
            out.append(w + ".selector: missing or empty")
        elif sel.get("matchLabels", {}).get("os") not in (None, "linux", "darwin", "windows"):
            out.append(w + ".selector: os %r" % sel["matchLabels"]["os"])
        if not re.match(r"^https?://[^/\s]+/\S+$", str(p.get("uri", ""))):
            out.append(w + ".uri: %r is not an http(s) URL" % p.get("uri"))
        if not re.fullmatch(r"[0-9a-f]{64}", str(p.get("sha256", ""))):
            out.append(w + ".sha256: %r is not 64 hex digits" % p.get("sha256"))
        b = str(p.get("bin", ""))
        if not b or b.startswith("/") or ".." in b.split("/"):
            out.append(w + ".bin: %r is not a relative path inside the plugin" % p.get("bin"))
        for j, f in enumerate(p.get("files") or []):
            if fields(f, "file", "%s.files[%d]" % (w, j)) and not (f.get("from") and f.get("to")):
                out.append("%s.files[%d]: from and to are both needed" % (w, j))
    return out


def load(path):
    """Returns the manifest at PATH parsed, or None when it does not parse (printed)."""
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        print("# %s: %s" % (path, e))
        return None


tmpl = load(TEMPLATE)
p = problems(tmpl, TEMPLATE) if tmpl is not None else ["does not parse"]
check(not p, "deploy/krew/gpunode.yaml follows Krew's v1alpha2 rules", "\n".join(p))

with tempfile.TemporaryDirectory(prefix="krew-test.") as tmp:
    r = subprocess.run([os.path.join(source_root, "scripts", "krew-package.sh"), os.path.dirname(gpunode), tmp],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, KREW_URI_BASE="https://releases.example.com/gpunode/"))
    check(r.returncode == 0, "scripts/krew-package.sh packs the built gpunode", r.stdout + r.stderr)
    man_path = os.path.join(tmp, "gpunode.yaml")
    man = load(man_path) if r.returncode == 0 else None
    p = problems(man, man_path) if man is not None else ["no manifest"]
    check(not p, "the packed manifest follows Krew's v1alpha2 rules", "\n".join(p))
    if man is not None and not p:
        plat = man["spec"]["platforms"][0]
        archive = os.path.join(tmp, os.path.basename(plat["uri"]))
        check(plat["uri"].startswith("https://releases.example.com/gpunode/kubectl-gpunode-"),
              "the uri is KREW_URI_BASE's: %s" % plat["uri"])
        ok = os.path.exists(archive)
        check(ok, "the archive the uri names is there (%s)" % os.path.basename(archive))
        if ok:
            with open(archive, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
            check(plat["sha256"] == sha, "the manifest's sha256 is the archive's (%s)" % sha)
            ver = subprocess.run([gpunode, "--version"], capture_output=True, text=True).stdout.split()[1]
            check(man["spec"]["version"] == "v" + ver, "the version is gpunode's: %s" % man["spec"]["version"])
            with tarfile.open(archive) as t:
                names = {m.name: m for m in t.getmembers()}
                froms = [f["from"] for f in plat.get("files", [])] or list(names)
                check(all(f in names for f in froms), "every files.from is in the archive (%s)" % ", ".join(froms))
                b = names.get(plat["bin"])
                check(b is not None and b.isfile() and b.mode & 0o777 == 0o755,
                      "the bin %s is in the archive, a file with mode 0755" % plat["bin"])
                if b is not None:
                    t.extract(b, os.path.join(tmp, "x"))
            exe = os.path.join(tmp, "x", plat["bin"])
            if os.path.exists(exe):
                out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10).stdout
                check(out.startswith("kubectl-gpunode (gpunode %s)" % ver), "the bin runs as the kubectl plugin: %s" % out.strip())
            again = os.path.join(tmp, "again")
            subprocess.run([os.path.join(source_root, "scripts", "krew-package.sh"), os.path.dirname(gpunode), again],
                           capture_output=True, timeout=60, env=dict(os.environ, KREW_URI_BASE="https://releases.example.com/gpunode/"))
            with open(os.path.join(again, os.path.basename(archive)), "rb") as f:
                check(hashlib.sha256(f.read()).hexdigest() == sha, "packing again gives the same archive (reproducible)")
        # the rules reject broken manifests
        broken = {
            "a sha256 of 63 digits": lambda m: m["spec"]["platforms"][0].update(sha256=plat["sha256"][:-1]),
            "no selector": lambda m: m["spec"]["platforms"][0].pop("selector"),
            "no bin": lambda m: m["spec"]["platforms"][0].pop("bin"),
            "a bin outside the plugin": lambda m: m["spec"]["platforms"][0].update(bin="../kubectl-gpunode"),
            "an unknown field": lambda m: m["spec"].update(homePage="x"),
            "a version without v": lambda m: m["spec"].update(version=ver),
            "no platforms": lambda m: m["spec"].update(platforms=[]),
        }
        for what, edit in broken.items():
            m = copy.deepcopy(man)
            edit(m)
            check(problems(m, man_path), "a manifest with %s is rejected" % what)

sys.exit(H.summary("krew"))
