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

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from alltalk_gui.core import app_settings
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


class LicenceNotAccepted(PermissionError):
    """The CPML has not been accepted; show :data:`LICENCE_SUMMARY` (or the full text) and ask."""


class DownloadError(RuntimeError):
    """A file could not be downloaded or did not match the Hub's size or hash; the message names it."""


@dataclass(frozen=True)
class DownloadProgress:
    file: str
    done_bytes: int
    total_bytes: int
    file_index: int  # 1-based
    file_count: int


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
        tqdm_class = _progress_bar(progress, name, meta.size or 0, index, len(names)) if progress else None
        try:
            path = Path(hf_hub_download(repo_id, name, revision=revision, local_dir=folder, tqdm_class=tqdm_class))
        except Exception as exc:
            raise DownloadError(f"Downloading {name} from {repo_id} failed: {exc}. Run the download again to "
                                "resume it.") from exc
        _verify(path, name, meta.size, _sha256_from_etag(meta.etag))
        if progress:
            progress(DownloadProgress(name, path.stat().st_size, path.stat().st_size, index, len(names)))
    return validate_base_model(folder)


def _sha256_from_etag(etag: str | None) -> str | None:
    """LFS/Xet files carry their SHA-256 as the ETag; small git files carry a git blob id (40 hex), not a SHA-256."""
    value = (etag or "").strip('"').removeprefix("W/").strip('"')
    return value if len(value) == 64 and all(c in "0123456789abcdef" for c in value) else None


def _verify(path: Path, name: str, size: int | None, sha256: str | None) -> None:
    actual = path.stat().st_size
    if size is not None and actual != size:
        path.unlink(missing_ok=True)
        raise DownloadError(f"{name} is {actual} bytes but the Hub says {size}; it was deleted. Download again.")
    if sha256:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != sha256:
            path.unlink(missing_ok=True)
            raise DownloadError(f"{name} does not match the Hub's SHA-256 (damaged download); it was deleted. "
                                "Download again.")


def _progress_bar(callback: Callable[[DownloadProgress], None], name: str, total: int, index: int, count: int):
    """A tqdm class for hf_hub_download that reports byte progress to ``callback`` instead of drawing a bar."""
    from tqdm.auto import tqdm

    class _Report(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = False
            kwargs["file"] = open(os.devnull, "w")  # noqa: SIM115 - closed in close()
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            result = super().update(n)
            callback(DownloadProgress(name, int(self.n), int(self.total or total), index, count))
            return result

        def close(self):
            stream = self.fp
            super().close()
            stream.close()

    return _Report
