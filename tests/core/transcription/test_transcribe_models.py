"""Model location and download: what is on disk, what would be fetched and how big, and the download itself
(served from a local HTTP server: tests never reach the internet)."""

from __future__ import annotations

import hashlib
import http.server
import threading
from dataclasses import replace

import pytest

from alltalk_gui.core.transcription import model_files as wm
from alltalk_gui.testing.tiny_whisper import faster_tiny_en
from tests.fake_hub import FakeHub


@pytest.fixture(autouse=True)
def empty_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache" / "hf"))


@pytest.fixture
def server(tmp_path):
    """A local HTTP server over tmp_path/www; yields its base URL."""
    www = tmp_path / "www"
    www.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(www), **kwargs)

        def log_message(self, *_args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", www
    httpd.shutdown()


def test_named_models_that_are_missing_say_what_would_be_downloaded(tmp_path):
    openai = wm.resolve("openai-whisper", "turbo")
    assert not openai.on_disk
    assert openai.download.urls[0].endswith("/large-v3-turbo.pt")
    assert openai.download.target == tmp_path / "cache" / "whisper" / "large-v3-turbo.pt"
    assert "about 1.6 GB" in openai.download.describe() and "openaipublic.azureedge.net" in openai.download.describe()
    assert len(openai.download.sha256) == 64

    faster = wm.resolve("faster-whisper", "small.en")
    assert not faster.on_disk
    assert faster.download.urls[1] == "https://huggingface.co/Systran/faster-whisper-small.en/resolve/main/model.bin"
    assert "about 484 MB" in faster.download.describe()
    assert set(wm.known_models("openai-whisper")) >= {"tiny", "base", "small", "medium", "large-v3", "turbo"}


def test_cached_models_and_local_paths_are_found(tmp_path, monkeypatch):
    target = tmp_path / "cache" / "whisper" / "tiny.pt"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"x")
    assert wm.resolve("openai-whisper", "tiny").path is None  # right name, wrong checksum: not the model
    sha = hashlib.sha256(b"x").hexdigest()
    monkeypatch.setattr(wm, "_openai_urls", lambda: {"tiny": f"https://example.org/models/{sha}/tiny.pt"})
    assert wm.resolve("openai-whisper", "tiny").path == target
    assert (target.parent / "tiny.pt.verified").read_text().split() == ["1", str(target.stat().st_mtime_ns), sha]
    target.write_bytes(b"y")  # replaced since it was verified
    assert wm.resolve("openai-whisper", "tiny").path is None

    folder = tmp_path / "cache" / "alltalk_gui" / "faster-whisper" / "base"
    folder.mkdir(parents=True)
    for name in ("config.json", "model.bin", "tokenizer.json", "vocabulary.json"):
        (folder / name).write_bytes(b"x")
    assert wm.resolve("faster-whisper", "base").path == folder

    local = wm.resolve("faster-whisper", str(faster_tiny_en()))
    assert local.on_disk and local.download is None


def test_a_partial_faster_whisper_folder_is_not_a_model(tmp_path):
    partial = tmp_path / "cache" / "alltalk_gui" / "faster-whisper" / "base"
    partial.mkdir(parents=True)
    (partial / "config.json").write_text("{}")
    (partial / "model.bin").write_bytes(b"x" * 100)
    assert not wm.folder_complete(partial)
    assert not wm.resolve("faster-whisper", "base").on_disk  # a download is offered instead
    with pytest.raises(wm.UnknownModel, match="incomplete: tokenizer.json, vocabulary.txt or vocabulary.json missing"):
        wm.resolve("faster-whisper", str(partial))

    (partial / "tokenizer.json").write_text("{}")
    (partial / "vocabulary.txt").write_text("a")
    assert wm.folder_complete(partial)
    (partial / wm.COMPLETE_STAMP).write_text('{"model.bin": 1000}')  # the stamp says model.bin was bigger
    assert not wm.folder_complete(partial)
    with pytest.raises(wm.UnknownModel, match="wrong size"):
        wm.resolve("faster-whisper", str(partial))


def test_wrong_kinds_of_paths_and_backends(tmp_path):
    with pytest.raises(wm.UnknownModel, match="neither a model name known to faster-whisper"):
        wm.resolve("faster-whisper", "tiny-ish")
    with pytest.raises(wm.UnknownModel, match="needs a checkpoint file"):
        wm.resolve("openai-whisper", str(faster_tiny_en()))
    pt = tmp_path / "model.pt"
    pt.write_bytes(b"x")
    with pytest.raises(wm.UnknownModel, match="not a faster-whisper model folder"):
        wm.resolve("faster-whisper", str(pt))
    with pytest.raises(wm.ModelError, match="Unknown transcription backend 'vosk'"):
        wm.resolve("vosk", "tiny")


def test_download_reports_progress_checks_the_checksum_and_writes_atomically(tmp_path, server):
    base, www = server
    payload = bytes(range(256)) * 8000  # ~2 MB
    (www / "tiny.pt").write_bytes(payload)
    info = wm.DownloadInfo("openai-whisper", "tiny", (f"{base}/tiny.pt",), 10**6, tmp_path / "models" / "tiny.pt",
                           hashlib.sha256(payload).hexdigest())
    seen = []
    path = wm.download(wm.ResolvedModel("openai-whisper", "tiny", None, info),
                       progress=lambda d, t: seen.append((d, t)))
    assert path.read_bytes() == payload
    assert seen[-1] == (len(payload), len(payload)) and [d for d, _ in seen] == sorted(d for d, _ in seen)

    damaged = replace(info, target=tmp_path / "models" / "bad.pt", sha256="0" * 64)
    with pytest.raises(wm.ModelError, match="checksum mismatch"):
        wm.download(wm.ResolvedModel("openai-whisper", "tiny", None, damaged))
    assert not damaged.target.exists()

    stopped = replace(info, target=tmp_path / "models" / "stopped.pt")
    with pytest.raises(wm.DownloadCancelled):
        wm.download(wm.ResolvedModel("openai-whisper", "tiny", None, stopped), should_stop=lambda: True)
    # no partial or temporary file left; the good download carries its "verified" stamp
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["tiny.pt", "tiny.pt.verified"]


def test_faster_whisper_download_takes_either_vocabulary_and_refuses_an_incomplete_repo(tmp_path, monkeypatch):
    """Each model ships vocabulary.txt or vocabulary.json: whichever the repository lists is fetched."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("config.json", "model.bin", "tokenizer.json", "vocabulary.json", "README.md"):
        (repo / name).write_bytes(name.encode() * 100)
    with FakeHub("Systran/faster-whisper-tiny", repo) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        folder = wm.download(wm.resolve("faster-whisper", "tiny"))
        assert sorted(p.name for p in folder.iterdir()) == [wm.COMPLETE_STAMP, "config.json", "model.bin",
                                                            "tokenizer.json", "vocabulary.json"]  # no README

        (repo / "model.bin").unlink()  # a repository without the weights
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "other-cache"))
        with pytest.raises(wm.ModelError, match="incomplete"):
            wm.download(wm.resolve("faster-whisper", "tiny"))


def test_no_network_is_a_clear_error(tmp_path):
    info = wm.DownloadInfo("openai-whisper", "base", ("http://127.0.0.1:9/base.pt",), 10**6, tmp_path / "base.pt")
    with pytest.raises(wm.NoNetwork, match="cannot be reached.*a .pt file"):
        wm.download(wm.ResolvedModel("openai-whisper", "base", None, info), timeout_s=2)
    assert not wm.network_available("127.0.0.1", 9, timeout_s=1)


def test_a_model_in_the_hugging_face_cache_is_used(tmp_path):
    """faster-whisper's own downloads land in the Hugging Face cache; those count as on disk."""
    repo = tmp_path / "cache" / "hf" / "models--Systran--faster-whisper-base.en"
    snapshot = repo / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    for name in ("model.bin", "config.json", "tokenizer.json"):
        (snapshot / name).write_bytes(b"x")
    assert not wm.resolve("faster-whisper", "base.en").on_disk  # no vocabulary file: not complete
    (snapshot / "vocabulary.txt").write_bytes(b"x")
    assert wm.resolve("faster-whisper", "base.en").path == snapshot


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The tiny.en model on a local Hub stand-in, with HF_ENDPOINT pointing at it."""
    import huggingface_hub.constants

    with FakeHub("Systran/faster-whisper-tiny.en", faster_tiny_en()) as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        # The suite runs with HF_HUB_OFFLINE=1 (conftest) so nothing reaches the internet; this server is local.
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        yield fake


def test_a_download_with_hf_endpoint_set_goes_there(hub, tmp_path):
    missing = wm.resolve("faster-whisper", "tiny.en")
    assert not missing.on_disk and missing.download.urls[0].startswith(hub.url + "/Systran/faster-whisper-tiny.en/")
    assert "127.0.0.1" in missing.download.describe()
    assert missing.download.target == tmp_path / "cache" / "hf" / "models--Systran--faster-whisper-tiny.en"
    assert wm.network_available()  # the check asks the configured endpoint, not huggingface.co

    seen = []
    folder = wm.download(missing, progress=lambda done, total: seen.append((done, total)))
    assert folder.is_relative_to(tmp_path / "cache" / "hf")  # the shared Hugging Face cache
    assert (folder / "model.bin").stat().st_size == (faster_tiny_en() / "model.bin").stat().st_size
    assert wm.folder_complete(folder) and (folder / wm.COMPLETE_STAMP).is_file()
    assert seen and seen[-1][0] == seen[-1][1] >= (folder / "model.bin").stat().st_size
    assert any(r.startswith("GET /Systran/faster-whisper-tiny.en/resolve/") and r.endswith("/model.bin")
               for r in hub.requests)
    assert wm.resolve("faster-whisper", "tiny.en").path == folder  # found in the cache from now on


def test_a_hub_download_can_be_cancelled_and_an_unreachable_endpoint_is_named(hub, tmp_path, monkeypatch):
    missing = wm.resolve("faster-whisper", "tiny.en")
    with pytest.raises(wm.DownloadCancelled, match="resumes"):
        wm.download(missing, should_stop=lambda: True)
    assert not wm.resolve("faster-whisper", "tiny.en").on_disk

    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    offline = wm.resolve("faster-whisper", "tiny.en")
    assert not wm.network_available(timeout_s=1)
    with pytest.raises(wm.NoNetwork, match="127.0.0.1:9 cannot be reached"):
        wm.download(offline, timeout_s=2)
