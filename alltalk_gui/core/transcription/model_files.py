"""Where Whisper models are, and what would have to be downloaded: asked before any model is loaded.

Loading a model by name makes openai-whisper and faster-whisper download it silently. The app instead asks
:func:`resolve` first: a model that is on disk gives its path; one that is not gives a :class:`DownloadInfo`
(which file, from where, how big, into which folder) so the user can agree, watch :func:`download` progress,
or pick a local model instead. With no network :func:`download` raises :class:`NoNetwork` saying so.

* openai-whisper: one ``.pt`` checkpoint per model, from the URLs in ``whisper._MODELS`` (openai's own server,
  as the package does it), cached in ``~/.cache/whisper``. The SHA-256 in the URL is checked while the file
  streams in, before it gets its name, and a file already there counts only once its checksum matched (a
  ``.verified`` stamp beside it records that, so the check runs once). The backend then loads the verified
  path, so openai-whisper never downloads by itself.
* faster-whisper: a CTranslate2 folder (``model.bin``, ``config.json``, ``tokenizer.json``, ``vocabulary.*``)
  from the Hugging Face repo in ``faster_whisper.utils._MODELS``, through ``huggingface_hub.snapshot_download``
  into the shared Hugging Face cache. That honours ``HF_ENDPOINT`` (a mirror), ``HF_HUB_CACHE`` / ``HF_HOME``,
  tokens, and resumes an interrupted download; progress and cancel go through its ``tqdm_class`` hook. A folder
  counts as complete only with all four kinds of file (and, when it carries our ``.complete`` stamp, with the
  sizes the stamp lists), so ``config.json`` plus ``model.bin`` alone is not a model.

A local model is a path: a ``.pt`` file for openai-whisper, a model folder for faster-whisper.
Nothing here imports torch: whisper's URL table is read from the source of ``whisper/__init__.py``.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import io
import json
import os
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlparse
from pathlib import Path
from typing import Callable

from alltalk_gui.core import atomic

OPENAI = "openai-whisper"
FASTER = "faster-whisper"
BACKENDS = (OPENAI, FASTER)

# Approximate download sizes in MB (fp16 checkpoints; the CTranslate2 conversions are the same size). The exact
# size comes from the server when the download starts.
APPROX_MB = {
    "tiny.en": 75, "tiny": 75, "base.en": 145, "base": 145, "small.en": 484, "small": 484, "medium.en": 1530,
    "medium": 1530, "large-v1": 3090, "large-v2": 3090, "large-v3": 3090, "large": 3090, "large-v3-turbo": 1620,
    "turbo": 1620, "distil-large-v2": 1510, "distil-medium.en": 789, "distil-small.en": 332,
    "distil-large-v3": 1510, "distil-large-v3.5": 1510,
}
# A CTranslate2 Whisper folder; models ship either vocabulary file, so both are tried.
FASTER_FILES = ("config.json", "model.bin", "tokenizer.json", "vocabulary.txt", "vocabulary.json")
FASTER_REQUIRED = ("config.json", "model.bin", "tokenizer.json")  # plus one of the vocabulary files
COMPLETE_STAMP = ".complete"      # in a downloaded model folder: {file: size} once every file arrived whole
VERIFIED_SUFFIX = ".verified"     # beside an openai-whisper .pt: "size mtime_ns sha256" once it matched
DEFAULT_ENDPOINT = "https://huggingface.co"


def hub_endpoint() -> str:
    """The Hugging Face Hub to download from: ``HF_ENDPOINT`` (a mirror) when set, read now, not at import."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_cache() -> Path | None:
    """The shared Hugging Face cache as configured now (None: huggingface_hub's default)."""
    home = os.environ.get("HF_HOME")
    cache = os.environ.get("HF_HUB_CACHE") or (os.path.join(home, "hub") if home else None)
    return Path(cache) if cache else None


class ModelError(Exception):
    """A model cannot be used; the message says which and what to do."""


class UnknownModel(ModelError):
    """Neither a known model name nor an existing path."""


class ModelNotDownloaded(ModelError):
    """A known model that is not on disk yet; ``.download`` says what fetching it involves."""

    def __init__(self, info: "DownloadInfo") -> None:
        super().__init__(f"The {info.backend} model '{info.model}' is not on this computer. {info.describe()}")
        self.download = info


class NoNetwork(ModelError):
    """The model must be downloaded but the server cannot be reached."""


class DownloadCancelled(ModelError):
    """The user stopped a download; the partial file was removed."""


@dataclass(frozen=True)
class DownloadInfo:
    backend: str
    model: str
    urls: tuple[str, ...]     # what will be fetched
    approx_bytes: int
    target: Path              # file (openai-whisper) or folder (faster-whisper: the Hugging Face cache's)
    sha256: str | None = None
    repo: str | None = None   # faster-whisper: the Hub repository, fetched with huggingface_hub

    def describe(self) -> str:
        files = ", ".join(u.rsplit("/", 1)[-1] for u in self.urls)
        return (f"Downloading it fetches {files} (about {_size(self.approx_bytes)}) from "
                f"{self.urls[0].split('/')[2]} into {self.target}.")


@dataclass(frozen=True)
class ResolvedModel:
    backend: str
    model: str                   # what the user asked for
    path: Path | None            # on disk: the .pt file or the CTranslate2 folder
    download: DownloadInfo | None = None

    @property
    def on_disk(self) -> bool:
        return self.path is not None


def known_models(backend: str) -> list[str]:
    return list(_openai_urls() if backend == OPENAI else _faster_repos())


def default_download_root(backend: str) -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "whisper" if backend == OPENAI else cache / "alltalk_gui" / "faster-whisper"


def resolve(backend: str, model: str, download_root: str | os.PathLike[str] | None = None) -> ResolvedModel:
    """Find ``model`` (a name or a local path) for ``backend`` without touching the network.

    Raises:
        ModelError: unknown backend.
        UnknownModel: not a known name and no such path, or a path of the wrong kind for the backend.
    """
    if backend not in BACKENDS:
        raise ModelError(f"Unknown transcription backend '{backend}'; use {' or '.join(BACKENDS)}.")
    root = Path(download_root) if download_root else default_download_root(backend)
    names = known_models(backend)
    if model not in names:
        return ResolvedModel(backend, model, _local_path(backend, model, names))
    if backend == OPENAI:
        url = _openai_urls()[model]
        target = root / url.rsplit("/", 1)[-1]
        info = DownloadInfo(OPENAI, model, (url,), APPROX_MB.get(model, 0) * 10**6, target, url.split("/")[-2])
        return ResolvedModel(OPENAI, model, target if verified_file(target, info.sha256) else None, info)
    repo = _faster_repos()[model]
    folder = root / model  # where the app downloaded before it used the Hugging Face cache
    cache = hub_cache()
    info = DownloadInfo(FASTER, model, tuple(f"{hub_endpoint()}/{repo}/resolve/main/{f}" for f in FASTER_FILES),
                        APPROX_MB.get(model, 0) * 10**6,
                        (cache or _default_hub_cache()) / f"models--{repo.replace('/', '--')}", repo=repo)
    found = folder if folder_complete(folder) else _hf_cached(repo)
    return ResolvedModel(FASTER, model, found, info)


def folder_complete(folder: Path) -> bool:
    """Whether ``folder`` is a whole faster-whisper model: config.json, model.bin, tokenizer.json and a
    vocabulary file, each at the size our ``.complete`` stamp lists when the folder has one."""
    if not all((folder / name).is_file() for name in FASTER_REQUIRED):
        return False
    if not any((folder / name).is_file() for name in FASTER_FILES[3:]):
        return False
    stamp = folder / COMPLETE_STAMP
    if not stamp.is_file():
        return True  # fetched by faster-whisper or huggingface_hub itself, which write each file atomically
    try:
        sizes = json.loads(stamp.read_text(encoding="utf-8"))
        return all((folder / name).stat().st_size == size for name, size in sizes.items())
    except (OSError, ValueError, AttributeError):
        return False


def verified_file(path: Path, sha256: str | None) -> bool:
    """Whether ``path`` exists and has the expected checksum. The answer is remembered in a stamp beside it (by
    size and modification time), so a 1.5 GB checkpoint is hashed once, not at every start."""
    if not path.is_file():
        return False
    if sha256 is None:
        return True
    stamp = path.with_name(path.name + VERIFIED_SUFFIX)
    stat = path.stat()
    key = f"{stat.st_size} {stat.st_mtime_ns} {sha256}"
    try:
        if stamp.read_text(encoding="utf-8").strip() == key:
            return True
    except OSError:
        pass
    if _sha256(path) != sha256:
        return False  # damaged or another file: resolve() offers the download, which replaces it
    try:
        atomic.write_text(stamp, key + "\n")
    except OSError:
        pass  # a read-only cache: verified again next time
    return True


def download(resolved: ResolvedModel, progress: Callable[[int, int], None] | None = None,
             should_stop: Callable[[], bool] | None = None, timeout_s: float = 15.0) -> Path:
    """Fetch a model that :func:`resolve` found missing; ``progress(bytes_done, bytes_total)``.

    Files are written atomically, so an interrupted download leaves nothing half-written.

    Raises:
        NoNetwork: the server cannot be reached (the message offers choosing a local model).
        DownloadCancelled: ``should_stop()`` became true.
        ModelError: the download failed or the checksum does not match.
    """
    if resolved.path is not None:
        return resolved.path
    info = resolved.download
    assert info is not None
    if info.backend == FASTER:
        if info.repo is None:
            raise ModelError(f"The faster-whisper model '{info.model}' names no Hub repository to download from.")
        return _hub_download(info, progress, should_stop, timeout_s)
    # openai-whisper: one file from openai's server, as the package itself fetches it, checksum checked on the way
    _fetch(info.urls[0], info.target, info, 0, info.approx_bytes, progress, should_stop, timeout_s)
    verified_file(info.target, info.sha256)  # records the check made before the rename, for resolve()
    return info.target


def network_available(host: str | None = None, port: int | None = None, timeout_s: float = 3.0) -> bool:
    """Whether a TCP connection to ``host`` can be opened (a quick check before offering a download).

    Without a host, the configured Hub endpoint (``HF_ENDPOINT``, else huggingface.co) is asked.
    """
    if host is None:
        host, port = endpoint_address(hub_endpoint())
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def endpoint_address(url: str) -> tuple[str, int]:
    """(host, port) of a download URL, for :func:`network_available`."""
    parsed = urlparse(url)
    return parsed.hostname or "huggingface.co", parsed.port or (80 if parsed.scheme == "http" else 443)


# -- internals -------------------------------------------------------------------------------------------------
def _fetch(url: str, target: Path, info: DownloadInfo, done: int, total: int,
           progress: Callable[[int, int], None] | None, should_stop: Callable[[], bool] | None,
           timeout_s: float) -> int:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        response = urllib.request.urlopen(url, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        raise ModelError(f"Downloading {url} failed: HTTP {exc.code} {exc.reason}.") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise NoNetwork(f"Cannot download the {info.backend} model '{info.model}': {url.split('/')[2]} cannot be "
                        f"reached ({reason}). Connect to the internet, or choose a model you already have on disk "
                        f"({'a .pt file' if info.backend == OPENAI else 'a faster-whisper model folder'}).") from exc
    digest = hashlib.sha256()
    with response, atomic.atomic_path(target) as tmp, open(tmp, "wb") as out:
        length = int(response.headers.get("Content-Length") or 0)
        if length:
            total = length  # the server's size is exact
        while True:
            if should_stop is not None and should_stop():
                raise DownloadCancelled(f"Download of '{info.model}' stopped; nothing was kept.")
            try:
                chunk = response.read(1 << 20)
            except OSError as exc:
                raise NoNetwork(f"The download of '{info.model}' broke off ({exc}); nothing was kept. Try again.") \
                    from exc
            if not chunk:
                break
            out.write(chunk)
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, max(total, done))
        if info.sha256 and digest.hexdigest() != info.sha256:
            # Raised inside atomic_path: the temporary file is removed and the target never gets the name.
            raise ModelError(f"The downloaded {info.model} model is damaged (checksum mismatch); nothing was kept. "
                             "Try again.")
    return done


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _local_path(backend: str, model: str, names: list[str]) -> Path:
    path = Path(model).expanduser()
    if not path.exists():
        raise UnknownModel(f"'{model}' is neither a model name known to {backend} ({', '.join(names)}) nor an existing "
                           "file or folder.")
    if backend == OPENAI and not path.is_file():
        raise UnknownModel(f"{path} is a folder; openai-whisper needs a checkpoint file (.pt). For a CTranslate2 "
                           "model folder use the faster-whisper backend.")
    if backend == FASTER and not (path.is_dir() and (path / "model.bin").is_file()):
        raise UnknownModel(f"{path} is not a faster-whisper model folder (it needs model.bin, config.json and "
                           "tokenizer.json). For a .pt checkpoint use the openai-whisper backend.")
    if backend == FASTER and not folder_complete(path):
        missing = [n for n in FASTER_REQUIRED if not (path / n).is_file()]
        if not any((path / n).is_file() for n in FASTER_FILES[3:]):
            missing.append("vocabulary.txt or vocabulary.json")
        raise UnknownModel(f"The faster-whisper model folder {path} is incomplete"
                           + (f": {', '.join(missing)} missing" if missing else " (a file has the wrong size)")
                           + ". Download the model again, or choose a complete folder.")
    return path.absolute()


def _hf_cached(repo: str) -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    # Read the cache location now: huggingface_hub reads HF_HUB_CACHE / HF_HOME only once, when imported.
    cache = hub_cache()
    found = try_to_load_from_cache(repo, "model.bin", cache_dir=str(cache) if cache else None)
    if isinstance(found, str) and folder_complete(Path(found).parent):
        return Path(found).parent
    return None


def _default_hub_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface" / "hub"


def _hub_download(info: DownloadInfo, progress: Callable[[int, int], None] | None,
                  should_stop: Callable[[], bool] | None, timeout_s: float) -> Path:
    """Fetch a faster-whisper repository's model files with ``snapshot_download`` into the shared cache."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    assert info.repo is not None
    cache = hub_cache()
    try:
        folder = Path(snapshot_download(
            info.repo, allow_patterns=list(FASTER_FILES), cache_dir=str(cache) if cache else None,
            endpoint=hub_endpoint(), etag_timeout=timeout_s,
            tqdm_class=_progress_class(info, progress, should_stop)))  # type: ignore[arg-type]
    except DownloadCancelled:
        raise
    except LocalEntryNotFoundError as exc:  # what huggingface_hub raises when the server cannot be reached
        raise _no_network(info, hub_endpoint(), exc) from exc
    except HfHubHTTPError as exc:
        raise ModelError(f"Downloading the {info.model} model from {hub_endpoint()} failed: {exc}") from exc
    except OSError as exc:
        raise _no_network(info, hub_endpoint(), exc) from exc
    except Exception as exc:  # noqa: BLE001 - httpx / requests connection errors have no common base here
        if "connect" in type(exc).__name__.lower() or "timeout" in type(exc).__name__.lower():
            raise _no_network(info, hub_endpoint(), exc) from exc
        raise
    if not any((folder / name).is_file() for name in FASTER_FILES[3:]):
        raise ModelError(f"The {info.model} model on the server has no vocabulary file; choose another model.")
    if not folder_complete(folder):
        raise ModelError(f"The download of '{info.model}' is incomplete ({folder}); try again.")
    sizes = {name: (folder / name).stat().st_size for name in FASTER_FILES if (folder / name).is_file()}
    atomic.write_text(folder / COMPLETE_STAMP, json.dumps(sizes, indent=2) + "\n")
    return folder


def _no_network(info: DownloadInfo, endpoint: str, exc: BaseException) -> NoNetwork:
    host = urlparse(endpoint).netloc or endpoint
    return NoNetwork(f"Cannot download the {info.backend} model '{info.model}': {host} cannot be reached "
                     f"({exc}). Connect to the internet (or set HF_ENDPOINT to a reachable Hub mirror), or choose a "
                     "model you already have on disk (a faster-whisper model folder).")


def _progress_class(info: DownloadInfo, progress: Callable[[int, int], None] | None,
                    should_stop: Callable[[], bool] | None) -> type:
    """A tqdm class for huggingface_hub that reports bytes through ``progress`` and cancels on ``should_stop``.

    snapshot_download makes its byte bars (total and done summed over the files) and a files bar with this
    class; raising from ``update`` stops the download threads, and the partial file stays in the cache's
    ``.incomplete`` form for the next attempt to resume.
    """
    from tqdm import tqdm

    class Progress(tqdm):  # type: ignore[misc]
        def __init__(self, *args, **kwargs):
            kwargs.pop("name", None)
            kwargs["file"] = io.StringIO()  # silent: the app shows its own progress
            kwargs["disable"] = False
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            if should_stop is not None and should_stop():
                raise DownloadCancelled(f"Download of '{info.model}' stopped; the part already fetched is kept "
                                        "in the Hugging Face cache and the next download resumes it.")
            result = super().update(n)
            if progress is not None and self.unit == "B" and (self.total or 0) > 0:
                progress(int(self.n), int(max(self.total, self.n)))
            return result

    return Progress


def _openai_urls() -> dict[str, str]:
    # Read the table from whisper/__init__.py's source: importing whisper imports torch (~2 s).
    spec = importlib.util.find_spec("whisper")
    if spec is None or spec.origin is None:
        raise ModelError("openai-whisper is not installed; install it or use the faster-whisper backend.")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_MODELS" for t in node.targets):
            return dict(ast.literal_eval(node.value))
    raise ModelError("This openai-whisper version has no model table (_MODELS); use a local .pt checkpoint.")


def _faster_repos() -> dict[str, str]:
    from faster_whisper.utils import _MODELS

    return dict(_MODELS)


def _size(n: int) -> str:
    return f"{n / 10**9:.1f} GB" if n >= 10**9 else f"{n / 10**6:.0f} MB"
