"""What a dataset folder was written for: the engine and the sample rate of its wavs (``dataset_info.json``).

Each engine trains at its own rate (XTTS v2 22 050 Hz, F5-TTS 24 kHz), and the dataset export writes the clips at
the rate of the project's engine. When the project's engine changes, the dataset no longer fits: its clips were
cut for another engine's length limit and resampled to another rate. The export writes this small file beside the
metadata CSVs, inside the folder it swaps in, so it always describes the wavs next to it; :func:`mismatch` says in
words what does not fit. A dataset written before this file existed (or by hand) has none: its rate is read from
its first wav's header and its engine is unknown.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from alltalk_gui.core import atomic
from alltalk_gui.core.engine_api.engine import Engine

INFO_FILE = "dataset_info.json"


@dataclass(frozen=True)
class DatasetInfo:
    engine: str | None     # the registry name of the engine it was written for; None: not recorded
    sample_rate: int | None  # of its wavs; None: no readable wav

    def to_dict(self) -> dict[str, object]:
        return {"engine": self.engine, "sample_rate": self.sample_rate}


def write_info(dataset_dir: str | os.PathLike[str], engine: str, sample_rate: int) -> None:
    atomic.write_json(Path(dataset_dir) / INFO_FILE, DatasetInfo(engine, int(sample_rate)).to_dict())


def read_info(dataset_dir: str | os.PathLike[str]) -> DatasetInfo | None:
    """What ``dataset_dir`` was written for; None when there is no dataset there. Never raises for bad content:
    an unreadable file counts as not recorded."""
    folder = Path(dataset_dir)
    if not folder.is_dir():
        return None
    try:
        data = json.loads((folder / INFO_FILE).read_text(encoding="utf-8"))
        engine, rate = data.get("engine"), data.get("sample_rate")
        if isinstance(engine, str) and isinstance(rate, int) and not isinstance(rate, bool):
            return DatasetInfo(engine, rate)
    except (OSError, ValueError, AttributeError):
        pass
    return DatasetInfo(None, _first_wav_rate(folder))


def mismatch(dataset_dir: str | os.PathLike[str], engine: Engine) -> str | None:
    """A sentence when the dataset in ``dataset_dir`` was written for another engine than ``engine``, or at another
    rate than it trains at; None when it fits or there is no dataset."""
    info = read_info(dataset_dir)
    if info is None or info.sample_rate is None:
        return None
    if info.sample_rate != engine.sample_rate:
        return (f"The dataset was written at {format_rate(info.sample_rate)}; {engine.title} trains at "
                f"{format_rate(engine.sample_rate)}. Export it again to write it at that rate from the recordings.")
    if info.engine is not None and info.engine != engine.name:
        return (f"The dataset was written for another engine ({info.engine}); export it again so that its clips "
                f"are checked against {engine.title}'s limits.")
    return None


def format_rate(rate: int) -> str:
    """``22,050 Hz``, ``24 kHz``, ``44.1 kHz``: as people write sample rates."""
    return f"{rate / 1000:g} kHz" if rate % 100 == 0 else f"{rate:,} Hz"


def _first_wav_rate(folder: Path) -> int | None:
    import soundfile as sf

    for wav in sorted((folder / "wavs").glob("*.wav"))[:1]:
        try:
            return int(sf.info(str(wav)).samplerate)
        except (RuntimeError, OSError, sf.LibsndfileError):
            return None
    return None
