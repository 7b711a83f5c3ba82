#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub, for the downloader's tests (standard library only).

Serves, on 127.0.0.1 and a port the OS picks (written to --port-file once listening):

  GET  /api/models?search=...&limit=N            search (every field, whatever `expand` asks)
  GET  /api/models/{id}/revision/{rev}           model info (sha, gated, cardData, config, siblings,
                                                 safetensors parameter counts)
  GET  /api/models/{id}/tree/{rev}?recursive=1   the file list, sizes, git oids, LFS sha256,
                                                 paginated with Link: rel="next"
  HEAD|GET /{id}/resolve/{rev}/{path}            regular files: 200 with ETag (git oid);
                                                 LFS files: 302 to the "CDN" with X-Linked-Etag,
                                                 X-Linked-Size, X-Repo-Commit
  HEAD|GET /_cdn/{sha256}                        the LFS bytes, with Range support, on host
                                                 "localhost" (another host name than the API's)

Errors as the Hub sends them: 401 + X-Error-Code RepoNotFound for a missing repo, 404 +
RevisionNotFound / EntryNotFound, 401/403 + GatedRepo for the gated repo without access.

The fixture repositories are built at start: `inferdesk-test/tiny-chat` (the files of the folder given
by --model, plus README.md, LICENSE, a chat template, a pickle `pytorch_model.bin` that must never be
downloaded, and a 4 MiB random `extra/blob.safetensors`), its tag `v1`, a gated repository and a
pickle-only one. Digests are computed here with hashlib: the reference is Python, not the code
under test.

Faults, set by POST /_control/fault with a JSON object (several may be active at once):
  {"path": "model.safetensors", "kind": K, "count": 1, "on": "cdn", ...}
  kind "drop"         close the connection after byte "at" of the file
       "corrupt"      flip the byte at offset "at"
       "status"       answer "status" (e.g. 500) with an empty body
       "ratelimit"    answer 429 with Retry-After: "retry_after" seconds
       "trickle"      send "rate" bytes per second
       "grow"         serve "extra" more bytes than the file list says (the HEAD reports the new size
                      unless "head": false, when only the body is longer)
       "ignore_range" answer a Range request with the whole file (200)
  "on" is where it applies: "cdn" (default: the bytes of LFS files, and the bytes of regular files),
  "resolve" (HEAD and GET of resolve/), "info", "tree"; "count" is how many requests it hits (-1:
  all). GET /_control/requests lists every request seen (method, path, range, status, auth, host);
  POST /_control/reset clears faults and the log; POST /_control/tree_page_size {"size": N}.
"""

import argparse
import hashlib
import json
import os
import random
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GRANTED_TOKEN = "hf_granted_token"
COMMIT_RE_LEN = 40


def git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class RepoFile:
    def __init__(self, path, data, lfs):
        self.path, self.data, self.lfs = path, data, lfs
        self.sha256 = hashlib.sha256(data).hexdigest()
        pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\nsize {len(data)}\n"
        # The git object of an LFS file is its pointer; of a regular file, its bytes.
        self.oid = git_oid(pointer.encode() if lfs else data)
        self.etag = self.sha256 if lfs else self.oid


class Revision:
    def __init__(self, repo_id, name, files):
        self.commit = hashlib.sha1(f"{repo_id}@{name}".encode()).hexdigest()
        self.files = {f.path: f for f in files}


class Repo:
    def __init__(self, repo_id, revisions, gated=False, downloads=0, likes=0, config=None, license="apache-2.0"):
        self.id, self.revisions, self.gated = repo_id, revisions, gated
        self.downloads, self.likes, self.config, self.license = downloads, likes, config or {}, license

    def revision(self, rev):
        if rev in self.revisions:
            return self.revisions[rev]
        for r in self.revisions.values():
            if r.commit == rev:
                return r
        return None


def build_repos(model_dir: str, seed: int):
    rng = random.Random(seed)
    base = []
    for name in sorted(os.listdir(model_dir)):
        with open(os.path.join(model_dir, name), "rb") as f:
            base.append(RepoFile(name, f.read(), name.endswith(".safetensors")))
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    extra = [
        RepoFile("README.md", b"---\nlicense: apache-2.0\n---\n# tiny-chat\nA tiny random-weight test model.\n", False),
        RepoFile("LICENSE", b"Apache License 2.0 (test fixture)\n", False),
        RepoFile("chat_template.jinja", b"{% for m in messages %}{{ m.content }}{% endfor %}", False),
        RepoFile(".gitattributes", b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n", False),
        RepoFile("pytorch_model.bin", rng.randbytes(64 * 1024), True),
        RepoFile("extra/blob.safetensors", rng.randbytes(4 * 1024 * 1024), True),
    ]
    main = Revision("inferdesk-test/tiny-chat", "main", base + extra)
    v1_files = [f for f in base if f.path in ("config.json", "model.safetensors", "tokenizer.json")]
    v1 = Revision("inferdesk-test/tiny-chat", "v1", v1_files + [RepoFile("README.md", b"# tiny-chat v1\n", False)])
    gated_files = [RepoFile("config.json", json.dumps(config).encode(), False),
                   RepoFile("model.safetensors", rng.randbytes(100 * 1024), True)]
    pickle_files = [RepoFile("pytorch_model.bin", rng.randbytes(1024), True), RepoFile("model.ckpt", b"x", True)]
    repos = [
        Repo("inferdesk-test/tiny-chat", {"main": main, "v1": v1}, downloads=1234, likes=56, config=config),
        Repo("inferdesk-test/gated-model", {"main": Revision("inferdesk-test/gated-model", "main", gated_files)},
             gated="manual", downloads=99, likes=7, config=config, license="llama3.2"),
        Repo("inferdesk-test/pickle-only", {"main": Revision("inferdesk-test/pickle-only", "main", pickle_files)},
             downloads=5, likes=0, config={"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"}),
    ]
    return {r.id: r for r in repos}


class State:
    def __init__(self, repos):
        self.repos = repos
        self.lock = threading.Lock()
        self.faults = []
        self.requests = []
        self.tree_page_size = 1000
        self.blobs = {}
        for repo in repos.values():
            for rev in repo.revisions.values():
                for f in rev.files.values():
                    self.blobs[f.sha256] = f

    def take_fault(self, path, on, kinds):
        """Consumes one use of the first active fault of one of `kinds` for `path` at `on`."""
        with self.lock:
            for fault in self.faults:
                if fault.get("kind") not in kinds or fault.get("path") not in (path, "*"):
                    continue
                if fault.get("on", "cdn") == on and fault.get("count", 1) != 0:
                    if fault.get("count", 1) > 0:
                        fault["count"] = fault.get("count", 1) - 1
                    return dict(fault)
        return None

    def grow(self, path):
        """The extra bytes a standing 'grow' fault adds to `path` (peeked, not consumed)."""
        with self.lock:
            for fault in self.faults:
                if fault.get("path") == path and fault.get("kind") == "grow" and fault.get("count", -1) != 0:
                    return fault
        return None


def parameter_counts(rev: Revision):
    """Parameters per dtype as the Hub reports them: from the safetensors headers (shape products);
    files without a readable header (the random blobs) are not counted, as the Hub skips them."""
    counts = {}
    for f in rev.files.values():
        if not f.path.endswith(".safetensors"):
            continue
        try:
            n = int.from_bytes(f.data[:8], "little")
            header = json.loads(f.data[8:8 + n])
            for name, t in header.items():
                if name != "__metadata__":
                    size = 1
                    for d in t["shape"]:
                        size *= d
                    counts[t["dtype"]] = counts.get(t["dtype"], 0) + size
        except (ValueError, KeyError, TypeError):
            continue
    return counts


def model_json(repo: Repo, rev: Revision, full: bool):
    out = {"_id": hashlib.md5(repo.id.encode()).hexdigest()[:24], "id": repo.id, "modelId": repo.id,
           "author": repo.id.split("/")[0], "private": False, "downloads": repo.downloads, "likes": repo.likes,
           "gated": repo.gated, "pipeline_tag": "text-generation", "library_name": "transformers",
           "tags": ["transformers", "safetensors", "text-generation", f"license:{repo.license}"],
           "config": {k: repo.config[k] for k in ("architectures", "model_type") if k in repo.config}}
    if full:
        params = parameter_counts(rev)
        out.update({"sha": rev.commit, "lastModified": "2025-01-01T00:00:00.000Z", "disabled": False,
                    "cardData": {"license": repo.license},
                    "siblings": [{"rfilename": p} for p in sorted(rev.files)],
                    "safetensors": {"parameters": params, "total": sum(params.values())},
                    "usedStorage": sum(len(f.data) for f in rev.files.values())})
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "LocalHub/1"

    def log_message(self, fmt, *args):  # quiet: the request log is at /_control/requests
        pass

    # -- plumbing -------------------------------------------------------------------------------
    @property
    def state(self) -> State:
        return self.server.state

    def record(self, status, extra=None):
        entry = {"method": self.command, "path": urllib.parse.urlsplit(self.path).path,
                 "query": urllib.parse.urlsplit(self.path).query, "range": self.headers.get("Range"),
                 "status": status, "auth": self.headers.get("Authorization") is not None,
                 "host": self.headers.get("Host", "")}
        entry.update(extra or {})
        with self.state.lock:
            self.state.requests.append(entry)

    def reply(self, status, body=b"", headers=None, content_type="application/json"):
        self.record(status)
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def reply_json(self, obj, headers=None):
        self.reply(200, json.dumps(obj).encode(), headers)

    def error(self, status, code, message):
        self.reply(status, json.dumps({"error": message}).encode(), {"X-Error-Code": code, "X-Error-Message": message})

    def token_ok(self, repo: Repo):
        if not repo.gated:
            return True, None
        auth = self.headers.get("Authorization", "")
        if auth == f"Bearer {GRANTED_TOKEN}":
            return True, None
        status = 403 if auth else 401
        return False, status

    def do_HEAD(self):
        self.route()

    def do_GET(self):
        self.route()

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        path = urllib.parse.urlsplit(self.path).path
        with self.state.lock:
            if path == "/_control/fault":
                self.state.faults.append(body)
            elif path == "/_control/reset":
                self.state.faults.clear()
                self.state.requests.clear()
            elif path == "/_control/tree_page_size":
                self.state.tree_page_size = int(body["size"])
            else:
                body = None
        if body is None:
            self.reply(404, b"{}")
        else:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    # -- routes ---------------------------------------------------------------------------------
    def route(self):
        split = urllib.parse.urlsplit(self.path)
        path, query = split.path, urllib.parse.parse_qs(split.query)
        parts = path.split("/")
        try:
            if path == "/_control/requests":
                with self.state.lock:
                    log = list(self.state.requests)
                return self.reply(200, json.dumps(log).encode())
            if path == "/api/models":
                return self.search(query)
            if path.startswith("/api/models/") and len(parts) >= 7 and parts[5] in ("revision", "tree"):
                repo_id = "/".join(parts[3:5])
                rev = urllib.parse.unquote("/".join(parts[6:]))
                return self.model_info(repo_id, rev) if parts[5] == "revision" else self.tree(repo_id, rev, query)
            if path.startswith("/_cdn/"):
                return self.cdn(parts[2])
            if len(parts) >= 6 and parts[3] == "resolve":
                repo_id = "/".join(parts[1:3])
                return self.resolve(repo_id, urllib.parse.unquote(parts[4]), urllib.parse.unquote("/".join(parts[5:])))
            self.error(404, "EntryNotFound", "no such endpoint")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def find(self, repo_id, rev):
        repo = self.state.repos.get(repo_id)
        if repo is None:
            self.error(401, "RepoNotFound", "Repository not found")
            return None, None
        revision = repo.revision(rev)
        if revision is None:
            self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
            return None, None
        return repo, revision

    def search(self, query):
        text = query.get("search", [""])[0].lower()
        limit = int(query.get("limit", ["20"])[0])
        found = [r for r in self.state.repos.values() if text in r.id.lower()]
        found.sort(key=lambda r: -r.downloads)
        self.reply_json([model_json(r, r.revisions["main"], False) for r in found[:limit]])

    def model_info(self, repo_id, rev):
        if self.fault_status(repo_id + "@info", "info"):
            return
        repo, revision = self.find(repo_id, rev)
        if repo:
            self.reply_json(model_json(repo, revision, True))

    def tree(self, repo_id, rev, query):
        if self.fault_status(repo_id + "@tree", "tree"):
            return
        repo, revision = self.find(repo_id, rev)
        if not repo:
            return
        entries, dirs = [], set()
        for f in sorted(revision.files.values(), key=lambda f: f.path):
            if "/" in f.path and f.path.rsplit("/", 1)[0] not in dirs:
                dirs.add(f.path.rsplit("/", 1)[0])
                entries.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": f.path.rsplit("/", 1)[0]})
            e = {"type": "file", "oid": f.oid, "size": len(f.data), "path": f.path}
            if f.lfs:
                e["lfs"] = {"oid": f.sha256, "size": len(f.data), "pointerSize": 134}
            entries.append(e)
        start = int(query.get("cursor", ["0"])[0])
        size = self.state.tree_page_size
        headers = {}
        if start + size < len(entries):
            host = self.headers.get("Host")
            headers["Link"] = f'<http://{host}/api/models/{repo_id}/tree/{rev}?recursive=1&cursor={start + size}>; rel="next"'
        self.reply_json(entries[start:start + size], headers)

    def fault_status(self, path, on):
        fault = self.state.take_fault(path, on, ("status", "ratelimit"))
        if not fault:
            return False
        if fault["kind"] == "ratelimit":
            self.reply(429, b"{}", {"Retry-After": str(fault.get("retry_after", 1))})
            return True
        if fault["kind"] == "status":
            self.reply(int(fault["status"]), b"{}")
            return True
        return False

    def served_bytes(self, f: RepoFile, head_view: bool):
        grow = self.state.grow(f.path)
        if grow and (not head_view or grow.get("head", True)):
            return f.data + b"\0" * int(grow.get("extra", 1))
        return f.data

    def resolve(self, repo_id, rev, file_path):
        repo, revision = self.find(repo_id, rev)
        if not repo:
            return
        ok, status = self.token_ok(repo)
        if not ok:
            return self.error(status, "GatedRepo", f"Access to model {repo_id} is restricted.")
        f = revision.files.get(file_path)
        if f is None:
            return self.error(404, "EntryNotFound", f"{file_path} does not exist")
        if self.fault_status(file_path, "resolve"):
            return
        data = self.served_bytes(f, True)
        common = {"X-Repo-Commit": revision.commit}
        if f.lfs:
            etag = hashlib.sha256(data).hexdigest()
            common.update({"ETag": f'"{f.oid}"', "X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(len(data)),
                           "Location": f"http://localhost:{self.server.server_port}/_cdn/{f.sha256}?expires=9999"})
            return self.reply(302, b"", common, "text/plain")
        common["ETag"] = f'"{git_oid(data)}"' if data != f.data else f'"{f.oid}"'
        self.send_body(f, common)

    def cdn(self, sha256):
        f = self.state.blobs.get(sha256)
        if f is None:
            return self.reply(404, b"not found", content_type="text/plain")
        self.send_body(f, {"ETag": f'"{f.sha256}"'})

    def send_body(self, f: RepoFile, headers):
        if self.fault_status(f.path, "cdn"):
            return
        fault = self.state.take_fault(f.path, "cdn", ("drop", "corrupt", "trickle", "ignore_range"))
        data = self.served_bytes(f, False)
        start, end = 0, len(data) - 1
        rng = self.headers.get("Range")
        if rng and not (fault and fault["kind"] == "ignore_range"):
            first, _, last = rng.split("=")[1].partition("-")
            start = int(first)
            end = min(int(last), end) if last else end
            if start >= len(data):
                return self.reply(416, b"", {"Content-Range": f"bytes */{len(data)}"}, "application/octet-stream")
            headers = dict(headers, **{"Content-Range": f"bytes {start}-{end}/{len(data)}"})
        status = 206 if "Content-Range" in headers else 200
        body = bytearray(data[start:end + 1])
        if fault and fault["kind"] == "corrupt" and start <= fault["at"] < len(data):
            body[fault["at"] - start] ^= 0xFF
        self.record(status, {"from": start})
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        self.write_body(bytes(body), start, fault)

    def write_body(self, body, start, fault):
        kind = fault["kind"] if fault else None
        if kind == "drop":
            cut = max(0, fault["at"] - start)
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if kind == "trickle":
            rate = int(fault.get("rate", 65536))
            step = max(1, rate // 20)
            for i in range(0, len(body), step):
                self.wfile.write(body[i:i + step])
                self.wfile.flush()
                time.sleep(0.05)
            return
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that goes away mid-reply (a killed download) is part of the tests, not an error.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="folder whose files make up inferdesk-test/tiny-chat")
    ap.add_argument("--port-file", required=True, help="where to write the port once listening")
    ap.add_argument("--seed", type=int, default=29)
    args = ap.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.state = State(build_repos(args.model, args.seed))
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_port))
    os.replace(tmp, args.port_file)
    print(f"local hub on http://127.0.0.1:{server.server_port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
