"""Download Parler-TTS Mini v1 or Large v1 from the Hugging Face Hub, after the user accepts the licences.

Each repository (``parler-tts/parler-tts-mini-v1``, ``parler-tts/parler-tts-large-v1``) is a complete model: the
decoder, Flan-T5's encoder and the DAC codec are all inside its weights, with Flan-T5's tokenizer beside them, so
one repository is one base-model folder (:mod:`.files`). What is fetched: ``config.json``,
``generation_config.json``, the tokenizer files and the weights (``model.safetensors``, or the index and its
shards for Large). Sizes: Mini about 3.5 GB, Large about 9.4 GB (fp32).

Licences, shown before the download: Parler-TTS's weights and code are Apache-2.0; Flan-T5, whose encoder and
tokenizer are part of the model, is Apache-2.0; Descript's DAC codec, also part of it, is MIT. The size/SHA-256
checks and progress are the engines' shared ones (:mod:`alltalk_gui.core.engine_api.hub_files`); an interrupted
download resumes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api.hub_files import (
    DownloadError,
    DownloadProgress,
    LicenceNotAccepted,
    progress_reporter,
    sha256_from_etag,
    verify_download,
)
from alltalk_gui.core.engines.parler.files import ParlerModelInfo, validate_base_model

__all__ = ["DownloadError", "DownloadProgress", "LicenceNotAccepted", "download_base_model", "REPOSITORIES"]

REPOSITORIES = {"mini": "parler-tts/parler-tts-mini-v1", "large": "parler-tts/parler-tts-large-v1"}
DEFAULT_SIZE = "mini"
DEFAULT_REVISION = "main"
WANTED = ("config.json", "generation_config.json", "preprocessor_config.json", "tokenizer.json",
          "tokenizer_config.json", "special_tokens_map.json", "spiece.model", "model.safetensors.index.json")
LICENCE_ID = "parler-tts-apache-2.0"
LICENCE_URL = "https://www.apache.org/licenses/LICENSE-2.0"
LICENCE_SHORT = "Apache-2.0 (Parler-TTS, Flan-T5); MIT (Descript's DAC codec)"
LICENCE_SUMMARY = (
    "Parler-TTS Mini v1 and Large v1 (parler-tts on the Hugging Face Hub) are licensed under the Apache License "
    f"2.0, {LICENCE_URL}: you may use, change and share the model and voices made from it, also commercially, "
    "keeping the licence and its notices. The model contains Google's Flan-T5 encoder and tokenizer (Apache-2.0) "
    "and Descript's DAC audio codec (MIT: use freely, keep the copyright notice). Only make voices of people "
    "who agreed to it. Accepting is recorded in this app's settings, and the download starts only after it."
)


def licence_accepted() -> bool:
    return app_settings.licence_accepted(LICENCE_ID)


def accept_licence() -> None:
    """Record that the user read and accepted the licences (call only after showing them)."""
    app_settings.accept_licence(LICENCE_ID)


def download_base_model(folder: str | os.PathLike[str], revision: str = DEFAULT_REVISION,
                        progress: Callable[[DownloadProgress], None] | None = None,
                        size: str = DEFAULT_SIZE) -> ParlerModelInfo:
    """Download (or finish downloading) Parler-TTS ``size`` ("mini" or "large") into ``folder`` and check it.

    Raises:
        LicenceNotAccepted: before any network access, when the licence has not been accepted.
        DownloadError: the repository cannot be listed, or a file failed to download or its size/hash check.
        BaseModelError: the downloaded folder does not validate.
    """
    if not licence_accepted():
        raise LicenceNotAccepted(LICENCE_SUMMARY)
    if size not in REPOSITORIES:
        raise DownloadError(f"Parler-TTS comes as {' or '.join(REPOSITORIES)}, not '{size}'.")
    from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url

    repo = REPOSITORIES[size]
    try:
        present = set(HfApi().list_repo_files(repo, revision=revision))
    except Exception as exc:
        raise DownloadError(f"Cannot list {repo}@{revision}: {exc}") from exc
    names = [n for n in WANTED if n in present] + sorted(n for n in present if n.endswith(".safetensors"))
    if "config.json" not in names or not any(n.endswith(".safetensors") for n in names):
        raise DownloadError(f"{repo}@{revision} has no config.json or weights; is it a Parler-TTS repository?")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for index, name in enumerate(names, start=1):
        try:
            meta = get_hf_file_metadata(hf_hub_url(repo, name, revision=revision))
        except Exception as exc:
            raise DownloadError(f"Cannot reach {repo} for {name}: {exc}") from exc
        target = folder / name
        sha256 = sha256_from_etag(meta.etag)
        if not _already_there(target, meta.size, sha256):
            reporter = progress_reporter(progress, name, meta.size or 0, index, len(names)) if progress else None
            try:
                path = Path(hf_hub_download(repo, name, revision=revision, local_dir=folder, tqdm_class=reporter))
            except Exception as exc:
                raise DownloadError(f"Downloading {name} from {repo} failed: {exc}. Run the download again to resume "
                                    "it.") from exc
            verify_download(path, name, meta.size, sha256)
        if progress:
            progress(DownloadProgress(name, target.stat().st_size, target.stat().st_size, index, len(names)))
    return validate_base_model(folder)


def _already_there(path: Path, size: int | None, sha256: str | None) -> bool:
    if not path.is_file() or (size is not None and path.stat().st_size != size):
        return False
    try:
        verify_download(path, path.name, size, sha256)
    except DownloadError:
        return False
    return True
