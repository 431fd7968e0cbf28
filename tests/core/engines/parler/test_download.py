"""Parler-TTS download: licences first, then the repository's files through huggingface_hub from a Hub-compatible
server on 127.0.0.1 (HF_ENDPOINT) serving the tiny model under the real repository's name; a resumed download
fetches nothing twice; Large's shards come through their index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.engines.parler import download
from alltalk_gui.core.engines.parler.download import DownloadError, LicenceNotAccepted, download_base_model
from tests.fake_hub import FakeHub


@pytest.fixture()
def settings(tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))


def test_nothing_is_fetched_before_the_licence_is_accepted(settings, tmp_path):
    engine = get_engine("parler")
    assert not engine.licence_accepted()
    assert "Apache License 2.0" in engine.licence.summary and "MIT" in engine.licence.summary
    with pytest.raises(LicenceNotAccepted, match="Flan-T5"):
        download_base_model(tmp_path / "model")
    assert not (tmp_path / "model").exists()


def run_download(endpoint: str, folder, config, size: str = "mini") -> dict:
    """The download in its own process: huggingface_hub reads HF_ENDPOINT and HF_HUB_OFFLINE when it is imported."""
    code = ("import json, sys; from alltalk_gui.core.engines.parler.download import download_base_model as d\n"
            "seen = []\n"
            "try:\n    info = d(sys.argv[1], size=sys.argv[2], progress=lambda p: seen.append(p.file))\n"
            "except Exception as e:\n    print(json.dumps({'error': type(e).__name__, 'message': str(e)})); sys.exit(0)\n"
            "print(json.dumps({'weights': [w.name for w in info.weights], 'parameters': info.parameters, "
            "'seen': sorted(set(seen))}))")
    env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0", HF_HOME=str(config / "hf"),
               ALLTALK_GUI_CONFIG_DIR=str(config), HF_HUB_DISABLE_TELEMETRY="1")
    result = subprocess.run([sys.executable, "-c", code, str(folder), size], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_mini_downloads_checks_and_resumes(tiny_parler, tmp_path, monkeypatch):
    config = tmp_path / "config"
    with FakeHub(download.REPOSITORIES["mini"], tiny_parler) as hub:
        first = run_download(hub.url, tmp_path / "model", config)
        assert first == {"error": "LicenceNotAccepted", "message": first.get("message")}
        monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(config))
        download.accept_licence()
        answer = run_download(hub.url, tmp_path / "model", config)
        assert answer.get("weights") == ["model.safetensors"], answer
        assert set(answer["seen"]) >= {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                                       "tokenizer_config.json", "special_tokens_map.json"}
        gets = [r for r in hub.requests if r.startswith("GET") and "/resolve/" in r]
        assert run_download(hub.url, tmp_path / "model", config)["parameters"] == answer["parameters"]
        assert [r for r in hub.requests if r.startswith("GET") and "/resolve/" in r] == gets  # nothing fetched twice


def test_a_repository_without_weights_is_refused(tiny_parler, tmp_path, monkeypatch):
    only_config = tmp_path / "repo"
    only_config.mkdir()
    shutil.copy(tiny_parler / "config.json", only_config)
    config = tmp_path / "config"
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(config))
    download.accept_licence()
    with FakeHub(download.REPOSITORIES["large"], only_config) as hub:
        answer = run_download(hub.url, tmp_path / "model", config, size="large")
    assert answer["error"] == "DownloadError" and "has no config.json or weights" in answer["message"]
    with pytest.raises(DownloadError, match="mini or large, not 'huge'"):
        download_base_model(tmp_path / "model", size="huge")
