"""What the engines' base-model downloads share: the errors, the progress values, and the checks of a file fetched
from the Hugging Face Hub against the Hub's own size and SHA-256 (the ETag of LFS/Xet files).

Each engine's ``download.py`` lists its files and licence and fetches them with
``huggingface_hub.hf_hub_download``; this module keeps the pieces they have in common in one place.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from alltalk_gui.core import folders


class LicenceNotAccepted(PermissionError):
    """The model's licence has not been accepted; show the engine's licence summary (or the full text) and ask."""


class DownloadError(RuntimeError):
    """A file could not be downloaded or did not match the Hub's size or hash; the message names it."""


@dataclass(frozen=True)
class DownloadProgress:
    file: str
    done_bytes: int
    total_bytes: int
    file_index: int  # 1-based
    file_count: int


def sha256_from_etag(etag: str | None) -> str | None:
    """LFS/Xet files carry their SHA-256 as the ETag; small git files carry a git blob id (40 hex), not a SHA-256."""
    value = (etag or "").strip('"').removeprefix("W/").strip('"')
    return value if len(value) == 64 and all(c in "0123456789abcdef" for c in value) else None


def verify_download(path: Path, name: str, size: int | None, sha256: str | None) -> None:
    """Delete ``path`` and raise :class:`DownloadError` naming it when its size or SHA-256 differs from the Hub's."""
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


def already_downloaded(path: Path, size: int | None, sha256: str | None) -> bool:
    """Whether ``path`` holds the Hub's file already (its size and SHA-256); a damaged one is deleted."""
    if not path.is_file() or (size is not None and path.stat().st_size != size):
        return False
    try:
        verify_download(path, path.name, size, sha256)
    except DownloadError:
        return False  # verify_download deleted it; download again
    return True


def fetch_verified(repo: str, name: str, revision: str, local_dir: Path, target: Path, size: int | None,
                   sha256: str | None, tqdm_class) -> None:
    """``hf_hub_download`` of ``repo``'s ``name`` into ``local_dir`` (which keeps its resume state under ``.cache``),
    checked against the Hub's size and SHA-256, then moved to ``target``.

    Raises:
        DownloadError: the download failed (run it again to resume) or the file does not match the Hub's.
    """
    from huggingface_hub import hf_hub_download

    try:
        path = Path(hf_hub_download(repo, name, revision=revision, local_dir=local_dir, tqdm_class=tqdm_class))
    except Exception as exc:
        raise DownloadError(f"Downloading {name} from {repo} failed: {exc}. Run the download again to resume "
                            "it.") from exc
    verify_download(path, name, size, sha256)
    if path != target:
        # Retried: on Windows the antivirus reads a new multi-GB file right after it is written, holding it.
        folders.rename(path, target, overwrite=True)


def progress_reporter(callback: Callable[[DownloadProgress], None], name: str, total: int, index: int, count: int):
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
