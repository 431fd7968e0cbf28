"""Download the XTTS v2 base model from the Hugging Face Hub, after the user has accepted its licence.

The weights are published under the Coqui Public Model License (CPML), not an open-source licence, so the app
shows it and records the user's acceptance in the app settings (:mod:`alltalk_gui.core.app_settings`) before
the first download; :func:`download_base_model` refuses to start without it.

Files come through ``huggingface_hub.hf_hub_download`` into the chosen folder (``local_dir``), which resumes an
interrupted download where it stopped. Each file's size is compared with the Hub's metadata and, for files
stored with LFS/Xet (the weights), its SHA-256 with the Hub's; a mismatch deletes the file and names it.
Progress comes out through a callback as :class:`DownloadProgress` values. The finished folder is checked with
:func:`alltalk_gui.core.engines.xtts.files.validate_base_model`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api.hub_files import (  # noqa: F401  (DownloadProgress re-exported: callers name it here)
    DownloadError,
    DownloadProgress,
    LicenceNotAccepted,
    progress_reporter,
    sha256_from_etag,
    verify_download,
)
from alltalk_gui.core.engines.xtts.files import OPTIONAL_FILES, REQUIRED_FILES, BaseModelInfo, validate_base_model

DEFAULT_REPO = "coqui/XTTS-v2"
DEFAULT_REVISION = "main"
LICENCE_ID = "coqui-cpml"
LICENCE_URL = "https://coqui.ai/cpml"
LICENCE_FILE = "LICENSE.txt"  # the full licence text, published next to the weights in the Hub repository
LICENCE_SUMMARY = (
    "The XTTS v2 model weights are licensed under the Coqui Public Model License 1.0.0 (CPML), "
    f"{LICENCE_URL}. It allows non-commercial use of the model and of its outputs; read the full text before "
    "you accept. Accepting is recorded in this app's settings, and the download starts only after it."
)


def licence_accepted() -> bool:
    return app_settings.licence_accepted(LICENCE_ID)


def accept_licence() -> None:
    """Record that the user read and accepted the CPML (call only after showing it)."""
    app_settings.accept_licence(LICENCE_ID)


def download_base_model(folder: str | os.PathLike[str], repo_id: str = DEFAULT_REPO,
                        revision: str = DEFAULT_REVISION,
                        progress: Callable[[DownloadProgress], None] | None = None) -> BaseModelInfo:
    """Download (or finish downloading) the base model into ``folder`` and validate it.

    Raises:
        LicenceNotAccepted: before any network access, when the CPML has not been accepted.
        DownloadError: a file failed to download or failed its size/hash check (it is deleted).
        BaseModelError: the downloaded folder does not validate.
    """
    if not licence_accepted():
        raise LicenceNotAccepted(LICENCE_SUMMARY)
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = list(REQUIRED_FILES) + list(OPTIONAL_FILES)
    for index, name in enumerate(names, start=1):
        try:
            meta = get_hf_file_metadata(hf_hub_url(repo_id, name, revision=revision))
        except EntryNotFoundError:
            if name in OPTIONAL_FILES:
                continue
            raise DownloadError(f"{repo_id}@{revision} has no {name}; is it an XTTS v2 repository?") from None
        except Exception as exc:
            raise DownloadError(f"Cannot reach {repo_id} for {name}: {exc}") from exc
        tqdm_class = progress_reporter(progress, name, meta.size or 0, index, len(names)) if progress else None
        try:
            path = Path(hf_hub_download(repo_id, name, revision=revision, local_dir=folder, tqdm_class=tqdm_class))
        except Exception as exc:
            raise DownloadError(f"Downloading {name} from {repo_id} failed: {exc}. Run the download again to "
                                "resume it.") from exc
        verify_download(path, name, meta.size, sha256_from_etag(meta.etag))
        if progress:
            progress(DownloadProgress(name, path.stat().st_size, path.stat().st_size, index, len(names)))
    return validate_base_model(folder)
