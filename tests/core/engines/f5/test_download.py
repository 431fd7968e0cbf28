"""F5-TTS download: licence first, then the four files through huggingface_hub from a Hub-compatible HTTP server
on 127.0.0.1 (HF_ENDPOINT), serving the tiny model's files under the real repository paths."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from alltalk_gui.core.engines.f5 import download as f5_download
from alltalk_gui.core.engines.f5.download import LicenceNotAccepted, download_base_model


class LocalHub:
    """Answers HEAD/GET on /<repo>/resolve/<revision>/<path> as the Hub does (X-Repo-Commit; weights with their
    SHA-256 as X-Linked-Etag, small files with a git blob id); 404 with X-Error-Code EntryNotFound otherwise, and
    401 with X-Error-Code GatedRepo for the repositories in ``gated`` (a user not logged in, or without access)."""

    def __init__(self, files: dict[str, bytes], gated: tuple[str, ...] = ()):
        self.files, self.gets, self.gated = files, [], gated
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

            def _answer(self, body: bool):
                key = self.path.split("?")[0].replace("/resolve/main/", "/", 1).lstrip("/")
                if any(key.startswith(repo + "/") for repo in hub.gated):
                    self.send_response(401)
                    self.send_header("X-Error-Code", "GatedRepo")
                    self.send_header("X-Error-Message", "Access to this model is restricted.")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = hub.files.get(key)
                if data is None:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("X-Repo-Commit", "0123456789abcdef0123456789abcdef01234567")
                if key.endswith((".safetensors", ".bin")):
                    self.send_header("X-Linked-Etag", f'"{hashlib.sha256(data).hexdigest()}"')
                    self.send_header("X-Linked-Size", str(len(data)))
                else:
                    self.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    hub.gets.append(key)
                    self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def hub_files(tiny: Path) -> dict[str, bytes]:
    return {
        "SWivid/F5-TTS/F5TTS_v1_Base/model_1250000.safetensors": (tiny / "model_0.safetensors").read_bytes(),
        "SWivid/F5-TTS/F5TTS_v1_Base/vocab.txt": (tiny / "vocab.txt").read_bytes(),
        "charactr/vocos-mel-24khz/config.yaml": (tiny / "vocos" / "config.yaml").read_bytes(),
        "charactr/vocos-mel-24khz/pytorch_model.bin": (tiny / "vocos" / "pytorch_model.bin").read_bytes(),
    }


def run_download(endpoint: str, folder: Path, config: Path) -> subprocess.CompletedProcess:
    """The download in its own process: huggingface_hub reads HF_ENDPOINT when it is imported."""
    code = ("import json, sys; from alltalk_gui.core.engines.f5.download import download_base_model as d\n"
            "seen = []\n"
            "try:\n    info = d(sys.argv[1], progress=lambda p: seen.append(p.file))\n"
            "except Exception as e:\n    print(json.dumps({'error': type(e).__name__, 'message': str(e)})); sys.exit(0)\n"
            "print(json.dumps({'weights': info.weights.name, 'vocab': len(info.vocab), 'seen': sorted(set(seen))}))")
    env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0", HF_HOME=str(config / "hf"),
               ALLTALK_GUI_CONFIG_DIR=str(config), HF_HUB_DISABLE_TELEMETRY="1")
    return subprocess.run([sys.executable, "-c", code, str(folder)], env=env, capture_output=True, text=True,
                          timeout=300)


def test_licence_is_required_before_any_network_access(tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    with pytest.raises(LicenceNotAccepted, match="CC BY-NC 4.0"):
        download_base_model(tmp_path / "model")
    assert not (tmp_path / "model").exists()


def test_download_lays_out_the_folder_verifies_and_resumes(tiny_f5, tmp_path, monkeypatch):
    config = tmp_path / "config"
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(config))
    f5_download.accept_licence()
    folder = tmp_path / "F5TTS_v1_Base"
    folder.mkdir()
    # The tiny weights stand in for v1 Base's, so the folder needs the tiny architecture to validate.
    (folder / "model_cfg.yaml").write_bytes((tiny_f5 / "model_cfg.yaml").read_bytes())
    files = hub_files(tiny_f5)
    with LocalHub(files) as hub:
        result = run_download(hub.endpoint, folder, config)
        answer = json.loads(result.stdout.strip().splitlines()[-1])
        assert answer.get("weights") == "model_1250000.safetensors", (answer, result.stderr[-2000:])
        assert answer["seen"] == ["model_1250000.safetensors", "vocab.txt", "vocos/config.yaml",
                                  "vocos/pytorch_model.bin"]
        assert len(hub.gets) == 4
        assert (folder / "vocos" / "pytorch_model.bin").read_bytes() == files[
            "charactr/vocos-mel-24khz/pytorch_model.bin"]
        assert not (folder / "F5TTS_v1_Base").exists()
        # A second run finds every file in place with the Hub's size and hash and fetches nothing.
        answer = json.loads(run_download(hub.endpoint, folder, config).stdout.strip().splitlines()[-1])
        assert answer.get("vocab") == 81 and len(hub.gets) == 4
        # A damaged local file is fetched again; a file missing on the Hub is named in the error.
        (folder / "vocos" / "pytorch_model.bin").write_bytes(b"x" * len(files["charactr/vocos-mel-24khz/pytorch_model.bin"]))
        answer = json.loads(run_download(hub.endpoint, folder, config).stdout.strip().splitlines()[-1])
        assert "weights" in answer and hub.gets[-1] == "charactr/vocos-mel-24khz/pytorch_model.bin"
        del files["SWivid/F5-TTS/F5TTS_v1_Base/vocab.txt"]
        (folder / "vocab.txt").unlink()
        answer = json.loads(run_download(hub.endpoint, folder, config).stdout.strip().splitlines()[-1])
        assert answer["error"] == "DownloadError" and "vocab.txt" in answer["message"]
