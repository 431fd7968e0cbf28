"""Base-model download: licence first, then size/hash-checked files and progress. The Hub client is replaced by
a local stand-in serving the tiny model's files (tests never touch the network)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest
from huggingface_hub.errors import EntryNotFoundError

from alltalk_gui.core import app_settings
from alltalk_gui.core.engines.xtts import download as xtts_download
from alltalk_gui.core.engines.xtts.download import (
    DownloadError,
    LicenceNotAccepted,
    accept_licence,
    download_base_model,
    licence_accepted,
)


@pytest.fixture(autouse=True)
def settings_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "config"
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(folder))
    return folder


class FakeHub:
    """Serves files from a folder the way hf_hub_download / get_hf_file_metadata do (LFS files: SHA-256 ETag)."""

    def __init__(self, source: Path, corrupt: str | None = None) -> None:
        self.source, self.corrupt, self.calls = source, corrupt, []

    def url(self, repo_id, filename, revision=None):
        return f"hub://{repo_id}@{revision}/{filename}"

    def metadata(self, url):
        name = url.rsplit("/", 1)[1]
        path = self.source / name
        if not path.exists():
            raise EntryNotFoundError(f"{name} not found")
        data = path.read_bytes()
        etag = hashlib.sha256(data).hexdigest() if name.endswith(".pth") else "0" * 40
        return SimpleNamespace(size=len(data), etag=f'"{etag}"')

    def download(self, repo_id, filename, *, revision, local_dir, tqdm_class=None):
        self.calls.append(filename)
        data = (self.source / filename).read_bytes()
        if filename == self.corrupt:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])  # same size, different bytes
        target = Path(local_dir) / filename
        target.write_bytes(data)
        if tqdm_class is not None:
            bar = tqdm_class(total=len(data))
            bar.update(len(data) // 2)
            bar.update(len(data) - len(data) // 2)
            bar.close()
        return str(target)

    def install(self, monkeypatch) -> "FakeHub":
        monkeypatch.setattr(huggingface_hub, "hf_hub_url", self.url)
        monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", self.metadata)
        monkeypatch.setattr(huggingface_hub, "hf_hub_download", self.download)
        return self


def test_no_download_before_the_licence_is_accepted(tiny, tmp_path, monkeypatch):
    hub = FakeHub(tiny).install(monkeypatch)
    with pytest.raises(LicenceNotAccepted, match="Coqui Public Model License"):
        download_base_model(tmp_path / "model")
    assert hub.calls == [] and not (tmp_path / "model").exists()
    assert not licence_accepted()


def test_acceptance_is_recorded_in_the_app_settings(settings_dir):
    accept_licence()
    saved = json.loads((settings_dir / "settings.json").read_text())
    assert "accepted_at" in saved["licences"][xtts_download.LICENCE_ID]
    assert licence_accepted()
    app_settings.set_value("base_model_dir", "/models/xtts")  # other keys keep the licence record
    assert licence_accepted() and app_settings.get("base_model_dir") == "/models/xtts"


def test_download_checks_and_validates_with_progress(tiny, tmp_path, monkeypatch):
    FakeHub(tiny).install(monkeypatch)
    accept_licence()
    seen = []
    info = download_base_model(tmp_path / "model", progress=seen.append)
    assert info.gpt_layers == 2
    files = {p.file for p in seen}
    assert files == {"model.pth", "config.json", "vocab.json", "dvae.pth", "mel_stats.pth"}  # no speakers file
    last = [p for p in seen if p.file == "model.pth"][-1]
    assert last.done_bytes == last.total_bytes == (tiny / "model.pth").stat().st_size


def test_damaged_download_is_deleted_and_named(tiny, tmp_path, monkeypatch):
    FakeHub(tiny, corrupt="dvae.pth").install(monkeypatch)
    accept_licence()
    with pytest.raises(DownloadError, match="dvae.pth does not match the Hub's SHA-256"):
        download_base_model(tmp_path / "model")
    assert not (tmp_path / "model" / "dvae.pth").exists()
    assert (tmp_path / "model" / "model.pth").exists()  # what was already fine stays for the next try


def test_unreadable_settings_file_is_left_alone(settings_dir):
    settings_dir.mkdir(parents=True)
    (settings_dir / "settings.json").write_text("{not json")
    with pytest.raises(app_settings.SettingsError, match="left as it is"):
        accept_licence()
    assert (settings_dir / "settings.json").read_text() == "{not json"


def test_missing_required_file_on_the_hub(tiny, tmp_path, monkeypatch):
    source = tmp_path / "repo"
    shutil.copytree(tiny, source)
    (source / "mel_stats.pth").unlink()
    FakeHub(source).install(monkeypatch)
    accept_licence()
    with pytest.raises(DownloadError, match="has no mel_stats.pth"):
        download_base_model(tmp_path / "model")
