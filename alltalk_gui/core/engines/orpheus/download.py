"""Download Orpheus 3B 0.1 and the SNAC 24 kHz codec from the Hugging Face Hub, after the user accepts the licence.

Two base models (:data:`MODELS`), both Llama 3.2 3B fine-tuned by canopylabs to speak in SNAC codes:

* ``pretrained`` - ``canopylabs/orpheus-3b-0.1-pretrained``, trained on 100 k hours of English speech; what
  Orpheus's own fine-tuning script starts from (the default here);
* ``finetuned`` - ``canopylabs/orpheus-3b-0.1-ft``, further trained on 8 voices (tara, leah, jess, leo, dan,
  mia, zac, zoe) for everyday speech.

The model folder is laid out as the Hub has it (config, tokenizer, ``model.safetensors`` or the shards its index
names), and ``hubertsiuzdak/snac_24khz`` (``config.json``, ``pytorch_model.bin``) goes into ``snac/``. Shards are
read from the index, not from a list written here, so a re-sharded upload still downloads. The Orpheus
repositories are gated on the Hub (Meta's Llama 3.2 licence must be accepted there too, while logged in):
huggingface_hub sends the token of ``hf auth login`` or ``HF_TOKEN``, and a refusal says so.

The weights are under the **Llama 3.2 Community License** (Orpheus is a Llama 3.2 derivative), SNAC under MIT.
The app shows :data:`LICENCE_SUMMARY`, records the acceptance in its settings and only then downloads; the size
and SHA-256 checks and the progress reports are the engines' shared ones
(:mod:`alltalk_gui.core.engine_api.hub_files`). ``hf_hub_download`` with ``local_dir`` resumes an interrupted
download; a file already in place with the Hub's size and hash is not fetched again. The Hub address comes from
``HF_ENDPOINT`` as for every huggingface_hub call (tests point it at a local server).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from alltalk_gui.core import app_settings, atomic
from alltalk_gui.core.engine_api.hub_files import (
    DownloadError,
    DownloadProgress,
    LicenceNotAccepted,
    already_downloaded,
    fetch_verified,
    progress_reporter,
    sha256_from_etag,
)
from alltalk_gui.core.engines.orpheus.codec import CODEC_DIR, CODEC_FILES
from alltalk_gui.core.engines.orpheus.files import SOURCE_FILE

__all__ = ["DownloadError", "DownloadProgress", "LicenceNotAccepted", "download_base_model", "MODELS"]

MODELS = {"pretrained": "canopylabs/orpheus-3b-0.1-pretrained", "finetuned": "canopylabs/orpheus-3b-0.1-ft"}
DEFAULT_MODEL = "pretrained"
CODEC_REPO = "hubertsiuzdak/snac_24khz"
DEFAULT_REVISION = "main"
MODEL_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")
OPTIONAL_FILES = ("generation_config.json", "special_tokens_map.json")
INDEX = "model.safetensors.index.json"
LICENCE_ID = "orpheus-llama3.2-community"
LICENCE_TITLE = "Llama 3.2 Community License"
LICENCE_URL = "https://www.llama.com/llama3_2/license/"
LICENCE_SUMMARY = (
    "Orpheus-TTS 3B 0.1 (canopylabs) is built on Meta's Llama 3.2 and its weights are under the Llama 3.2 "
    f"Community License ({LICENCE_URL}): you may use, change and share the model and voices made from it, also "
    "commercially, while your products have fewer than 700 million monthly users; you must keep the licence with "
    "what you share, say \"Built with Llama\", follow Meta's Acceptable Use Policy, and a model you share must have "
    "a name that begins with \"Llama\". On the Hugging Face Hub the Orpheus repositories are gated: accept the "
    "licence on the model's page while logged in, and log in here too (hf auth login, or set HF_TOKEN). The SNAC "
    "codec (hubertsiuzdak/snac_24khz) is MIT-licensed. Accepting is recorded in this app's settings, and the "
    "download starts only after it."
)


def licence_accepted() -> bool:
    return app_settings.licence_accepted(LICENCE_ID)


def accept_licence() -> None:
    """Record that the user read and accepted the licence (call only after showing it)."""
    app_settings.accept_licence(LICENCE_ID)


def download_base_model(folder: str | os.PathLike[str], repo_id: str = MODELS[DEFAULT_MODEL],
                        revision: str = DEFAULT_REVISION, progress: Callable[[DownloadProgress], None] | None = None):
    """Download (or finish downloading) an Orpheus model (``repo_id``: one of :data:`MODELS`' repositories, or
    another of the same layout, such as canopylabs' multilingual ones) and SNAC into ``folder``, and validate it.

    Raises:
        LicenceNotAccepted: before any network access, when the licence has not been accepted.
        DownloadError: a file failed to download, was refused (gated, not logged in) or failed its size/hash check.
        BaseModelError: the downloaded folder does not validate.
    """
    if not licence_accepted():
        raise LicenceNotAccepted(LICENCE_SUMMARY)
    from alltalk_gui.core.engines.orpheus.files import validate_base_model

    folder = Path(folder)
    (folder / CODEC_DIR).mkdir(parents=True, exist_ok=True)
    repo = repo_id
    plan = [(repo, name, name, True) for name in MODEL_FILES] + [(repo, name, name, False) for name in OPTIONAL_FILES]
    plan += [(CODEC_REPO, name, f"{CODEC_DIR}/{name}", True) for name in CODEC_FILES]
    fetched = _fetch_all(plan, folder, revision, progress, first=0, total=len(plan) + 1)
    shards = _weights_plan(repo, folder, revision)
    _fetch_all([(repo, s, s, True) for s in shards], folder, revision, progress, first=fetched,
               total=fetched + len(shards))
    atomic.write_json(folder / SOURCE_FILE, {"repo": repo, "revision": revision, "codec": CODEC_REPO})
    return validate_base_model(folder)


def _weights_plan(repo: str, folder: Path, revision: str) -> list[str]:
    """The weight files: the shards the index names (the index fetched first), else ``model.safetensors``."""
    if _fetch_all([(repo, INDEX, INDEX, False)], folder, revision, None, first=0, total=1):
        try:
            return sorted(set(json.loads((folder / INDEX).read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise DownloadError(f"{INDEX} from {repo} cannot be read: {exc}") from exc
    return ["model.safetensors"]


def _fetch_all(plan, folder: Path, revision: str, progress, *, first: int, total: int) -> int:
    """Fetch ``(repo, name, local, required)`` files; returns how many were there (optional ones may be absent)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError, GatedRepoError, RepositoryNotFoundError

    count = 0
    for repo, name, local, required in plan:
        rev = revision if repo != CODEC_REPO else DEFAULT_REVISION
        try:
            meta = get_hf_file_metadata(hf_hub_url(repo, name, revision=rev))
        except EntryNotFoundError:
            if required:
                raise DownloadError(f"{repo}@{rev} has no {name}; is it an Orpheus-TTS repository?") from None
            continue
        except (GatedRepoError, RepositoryNotFoundError) as exc:
            raise DownloadError(f"The Hub refused {repo}: it is gated. Accept the Llama 3.2 licence on "
                                f"https://huggingface.co/{repo} while logged in, then log in here (hf auth login, "
                                "or set HF_TOKEN) and download again.") from exc
        except Exception as exc:
            raise DownloadError(f"Cannot reach {repo} for {name}: {exc}") from exc
        count += 1
        target = folder / local
        sha256 = sha256_from_etag(meta.etag)
        index = first + count
        if not already_downloaded(target, meta.size, sha256):
            # hf_hub_download keeps its resume state under <local_dir>/.cache.
            fetch_verified(repo, name, rev, target.parent, target, meta.size, sha256,
                           progress_reporter(progress, local, meta.size or 0, index, total) if progress else None)
        if progress:
            size = target.stat().st_size
            progress(DownloadProgress(local, size, size, index, total))
    return count
