"""Download F5-TTS v1 Base and its Vocos vocoder from the Hugging Face Hub, after the user accepts the licence.

Files (fetched into one folder laid out as AllTalk v2's ``models/f5tts/<name>/``, see :mod:`.files`)::

    SWivid/F5-TTS              F5TTS_v1_Base/model_1250000.safetensors  -> model_1250000.safetensors (1.35 GB)
                               F5TTS_v1_Base/vocab.txt                  -> vocab.txt
    charactr/vocos-mel-24khz   config.yaml, pytorch_model.bin           -> vocos/

The F5-TTS weights are published under CC BY-NC 4.0 (they were trained on the Emilia corpus, which is
non-commercial); Vocos is MIT. The app shows :data:`LICENCE_SUMMARY`, records the acceptance in its settings
and only then downloads, as for XTTS; the size/SHA-256 checks and progress reporting are the engines' shared ones
(:mod:`alltalk_gui.core.engine_api.hub_files`). ``hf_hub_download`` with ``local_dir`` resumes an
interrupted download; a file that is already in place with the Hub's size and hash is not fetched again.
The Hub address comes from ``HF_ENDPOINT`` as for every huggingface_hub call (tests point it at a local
server).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

from alltalk_gui.core import app_settings
from alltalk_gui.core.engines.f5.files import F5ModelInfo, VOCOS_DIR, validate_base_model
from alltalk_gui.core.engine_api.hub_files import (
    DownloadError,
    DownloadProgress,
    LicenceNotAccepted,
    already_downloaded,
    fetch_verified,
    progress_reporter,
    sha256_from_etag,
)

__all__ = ["DownloadError", "DownloadProgress", "LicenceNotAccepted", "download_base_model", "FILES"]

MODEL_REPO = "SWivid/F5-TTS"
VOCODER_REPO = "charactr/vocos-mel-24khz"
DEFAULT_REVISION = "main"
# (repository, path in the repository, path in the local folder)
FILES = (
    (MODEL_REPO, "F5TTS_v1_Base/model_1250000.safetensors", "model_1250000.safetensors"),
    (MODEL_REPO, "F5TTS_v1_Base/vocab.txt", "vocab.txt"),
    (VOCODER_REPO, "config.yaml", f"{VOCOS_DIR}/config.yaml"),
    (VOCODER_REPO, "pytorch_model.bin", f"{VOCOS_DIR}/pytorch_model.bin"),
)
LICENCE_ID = "f5tts-cc-by-nc-4.0"
LICENCE_URL = "https://creativecommons.org/licenses/by-nc/4.0/"
LICENCE_SUMMARY = (
    "The F5-TTS v1 Base model weights (SWivid/F5-TTS) are licensed under Creative Commons "
    f"Attribution-NonCommercial 4.0 (CC BY-NC 4.0), {LICENCE_URL}, because the Emilia corpus they were trained "
    "on is non-commercial: you may use the model and voices made from it for non-commercial purposes, with "
    "attribution. The Vocos vocoder (charactr/vocos-mel-24khz) is MIT-licensed. Accepting is recorded in this "
    "app's settings, and the download starts only after it."
)


def licence_accepted() -> bool:
    return app_settings.licence_accepted(LICENCE_ID)


def accept_licence() -> None:
    """Record that the user read and accepted the licence (call only after showing it)."""
    app_settings.accept_licence(LICENCE_ID)


def download_base_model(folder: str | os.PathLike[str], revision: str = DEFAULT_REVISION,
                        progress: Callable[[DownloadProgress], None] | None = None) -> F5ModelInfo:
    """Download (or finish downloading) F5-TTS v1 Base and Vocos into ``folder`` and validate it.

    ``revision`` applies to the F5-TTS repository; Vocos is always taken from its ``main``.

    Raises:
        LicenceNotAccepted: before any network access, when the licence has not been accepted.
        DownloadError: a file failed to download or failed its size/hash check (it is deleted).
        BaseModelError: the downloaded folder does not validate.
    """
    if not licence_accepted():
        raise LicenceNotAccepted(LICENCE_SUMMARY)
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError

    folder = Path(folder)
    (folder / VOCOS_DIR).mkdir(parents=True, exist_ok=True)
    for index, (repo, name, local) in enumerate(FILES, start=1):
        rev = revision if repo == MODEL_REPO else DEFAULT_REVISION
        try:
            meta = get_hf_file_metadata(hf_hub_url(repo, name, revision=rev))
        except EntryNotFoundError:
            raise DownloadError(f"{repo}@{rev} has no {name}; is it the F5-TTS repository?") from None
        except Exception as exc:
            raise DownloadError(f"Cannot reach {repo} for {name}: {exc}") from exc
        target = folder / local
        sha256 = sha256_from_etag(meta.etag)
        if not already_downloaded(target, meta.size, sha256):
            _fetch(repo, name, rev, folder, target, meta.size, sha256,
                   progress_reporter(progress, local, meta.size or 0, index, len(FILES)) if progress else None)
        if progress:
            progress(DownloadProgress(local, target.stat().st_size, target.stat().st_size, index, len(FILES)))
    shutil.rmtree(folder / "F5TTS_v1_Base", ignore_errors=True)  # emptied by the moves in _fetch
    return validate_base_model(folder)


def _fetch(repo: str, name: str, revision: str, folder: Path, target: Path, size: int | None,
           sha256: str | None, tqdm_class) -> None:
    # Vocos files land in vocos/ directly; F5's sit in a subfolder of their repository and are moved up, so
    # the folder has AllTalk's flat layout.
    local_dir = target.parent if "/" not in name else folder
    fetch_verified(repo, name, revision, local_dir, target, size, sha256, tqdm_class)


