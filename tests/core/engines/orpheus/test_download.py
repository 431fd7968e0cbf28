"""Orpheus download: the Llama 3.2 licence first, then the model (shards as its index names them) and SNAC into
``snac/`` through huggingface_hub from a Hub-compatible server on 127.0.0.1 (HF_ENDPOINT); a second run fetches
nothing, a gated repository says how to get access, a missing file is named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alltalk_gui.core.engines.orpheus import download as orpheus_download
from alltalk_gui.core.engines.orpheus.download import CODEC_REPO, MODELS, LicenceNotAccepted, download_base_model
from tests.core.engines.f5.test_download import LocalHub


def hub_files(tiny: Path, repo: str) -> dict[str, bytes]:
    """The tiny model under the real repository names, its weights in two shards with an index (as the Hub has
    Orpheus 3B), and the tiny codec under SNAC's repository."""
    from safetensors.torch import load_file, save

    state = load_file(str(tiny / "model.safetensors"))
    keys = sorted(state)
    shards = {"model-00001-of-00002.safetensors": keys[:10], "model-00002-of-00002.safetensors": keys[10:]}
    files = {f"{repo}/{name}": save({k: state[k] for k in part}, metadata={"format": "pt"})
             for name, part in shards.items()}
    index = {"metadata": {}, "weight_map": {k: name for name, part in shards.items() for k in part}}
    files[f"{repo}/model.safetensors.index.json"] = json.dumps(index).encode()
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        files[f"{repo}/{name}"] = (tiny / name).read_bytes()
    for name in ("config.json", "pytorch_model.bin"):
        files[f"{CODEC_REPO}/{name}"] = (tiny / "snac" / name).read_bytes()
    return files


def run_download(endpoint: str, folder: Path, config: Path) -> dict:
    """The download in its own process: huggingface_hub reads HF_ENDPOINT when it is imported."""
    code = ("import json, sys; from alltalk_gui.core.engines.orpheus.download import download_base_model as d\n"
            "seen = []\n"
            "try:\n    info = d(sys.argv[1], progress=lambda p: seen.append(p.file))\n"
            "except Exception as e:\n    print(json.dumps({'error': type(e).__name__, 'message': str(e)})); sys.exit(0)\n"
            "print(json.dumps({'parameters': info.parameters, 'shards': len(info.weights), 'seen': sorted(set(seen))}))")
    env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0", HF_HOME=str(config / "hf"),
               ALLTALK_GUI_CONFIG_DIR=str(config), HF_HUB_DISABLE_TELEMETRY="1")
    env.pop("HF_TOKEN", None)
    result = subprocess.run([sys.executable, "-c", code, str(folder)], env=env, capture_output=True, text=True,
                            timeout=300)
    lines = result.stdout.strip().splitlines()
    assert lines, result.stderr[-2000:]
    return json.loads(lines[-1])


def test_licence_is_required_before_any_network_access(tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    with pytest.raises(LicenceNotAccepted, match="Llama 3.2 Community License"):
        download_base_model(tmp_path / "model")
    assert not (tmp_path / "model").exists()


def test_download_lays_out_the_folder_and_resumes(tiny_orpheus, tmp_path, monkeypatch):
    config = tmp_path / "config"
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(config))
    orpheus_download.accept_licence()
    folder = tmp_path / "orpheus"
    repo = MODELS["pretrained"]
    files = hub_files(tiny_orpheus, repo)
    with LocalHub(files) as hub:
        answer = run_download(hub.endpoint, folder, config)
        assert answer.get("shards") == 2, answer
        assert "snac/pytorch_model.bin" in answer["seen"] and "model-00002-of-00002.safetensors" in answer["seen"]
        assert json.loads((folder / ".alltalk_source.json").read_text())["repo"] == repo
        fetched = len(hub.gets)
        assert fetched == len(files)  # special_tokens_map.json is optional: absent here, not an error
        assert run_download(hub.endpoint, folder, config)["shards"] == 2 and len(hub.gets) == fetched
        del files[f"{repo}/tokenizer.json"]
        (folder / "tokenizer.json").unlink()
        answer = run_download(hub.endpoint, folder, config)
        assert answer["error"] == "DownloadError" and "tokenizer.json" in answer["message"]


def test_a_gated_repository_says_how_to_get_access(tiny_orpheus, tmp_path, monkeypatch):
    config = tmp_path / "config"
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(config))
    orpheus_download.accept_licence()
    repo = MODELS["pretrained"]
    with LocalHub(hub_files(tiny_orpheus, repo), gated=(repo,)) as hub:
        answer = run_download(hub.endpoint, tmp_path / "orpheus", config)
    assert answer["error"] == "DownloadError"
    assert "gated" in answer["message"] and "HF_TOKEN" in answer["message"] and repo in answer["message"]
