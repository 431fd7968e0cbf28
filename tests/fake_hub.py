"""A local stand-in for the Hugging Face Hub: just enough of its HTTP API for ``snapshot_download``.

It serves one model repository from a folder: ``GET /api/models/{repo}/revision/{rev}`` (the commit),
``GET /api/models/{repo}/tree/{rev}`` (the files and sizes) and ``HEAD``/``GET /{repo}/resolve/{rev}/{file}`` (with the headers huggingface_hub reads: the commit, an
ETag, the size; ranges for resumed downloads). Every request path is recorded, so a test can show that a
download with ``HF_ENDPOINT`` set went there. Bound to 127.0.0.1 on a free port.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHub:
    def __init__(self, repo: str, folder: Path) -> None:
        self.repo, self.folder = repo, Path(folder)
        self.requests: list[str] = []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args):
                pass

            def do_HEAD(self):
                hub._serve(self, body=False)

            def do_GET(self):
                hub._serve(self, body=True)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeHub":
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _files(self) -> list[str]:
        return sorted(p.name for p in self.folder.iterdir() if p.is_file())

    def _serve(self, handler: http.server.BaseHTTPRequestHandler, body: bool) -> None:
        path = unquote(urlparse(handler.path).path)
        self.requests.append(f"{handler.command} {path}")
        api = f"/api/models/{self.repo}"
        if path.startswith(f"{api}/tree/"):
            tree = [{"type": "file", "path": name, "size": (self.folder / name).stat().st_size,
                     "oid": hashlib.sha1((self.folder / name).read_bytes()).hexdigest()} for name in self._files()]
            return self._send(handler, 200, json.dumps(tree).encode(), {"Content-Type": "application/json"}, body)
        if path.startswith(api):
            data = json.dumps({"id": self.repo, "modelId": self.repo, "sha": COMMIT, "private": False,
                               "siblings": [{"rfilename": name} for name in self._files()]}).encode()
            return self._send(handler, 200, data, {"Content-Type": "application/json"}, body)
        prefix = f"/{self.repo}/resolve/"
        if path.startswith(prefix):
            name = path[len(prefix):].split("/", 1)[-1]
            file = self.folder / name
            if not file.is_file():
                return self._send(handler, 404, b"Entry not found", {"X-Error-Code": "EntryNotFound"}, body)
            data = file.read_bytes()
            etag = hashlib.sha256(data).hexdigest()
            headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{etag}"', "Content-Type": "application/octet-stream",
                       "Accept-Ranges": "bytes"}
            start = 0
            ranged = handler.headers.get("Range", "")
            if ranged.startswith("bytes=") and body:
                start = int(ranged[6:].split("-")[0] or 0)
                headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
                return self._send(handler, 206, data[start:], headers, body)
            return self._send(handler, 200, data, headers, body)
        return self._send(handler, 404, b"not here", {"X-Error-Code": "RepoNotFound"}, body)

    @staticmethod
    def _send(handler, status: int, data: bytes, headers: dict[str, str], body: bool) -> None:
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if body:
            handler.wfile.write(data)
