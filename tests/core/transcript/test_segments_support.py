"""Helpers shared by the segment, segmentation, transcription and export tests: small projects with real wavs.

Sources are added the way the importer leaves them (a mono 22 050 Hz 16-bit working copy in ``audio/`` and an
entry in project.json), without going through the importer, so these tests do not depend on it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import soundfile as sf

from alltalk_gui.core.project.folder import Source, VoiceProject
from alltalk_gui.core.transcript.segments import Segment, Word

RATE = 22_050


def make_project(tmp_path: Path, language: str = "en") -> VoiceProject:
    return VoiceProject.create(tmp_path / "voice", language=language)


def add_source(project: VoiceProject, name: str, samples: np.ndarray, rate: int = RATE) -> Source:
    """Write ``samples`` as the working copy of a new source called ``name`` and record it in project.json."""
    source_id = f"s{len(project.sources) + 1:03d}"
    audio_file = f"audio/{source_id}.wav"
    sf.write(project.path(audio_file), samples.astype(np.float32), rate, subtype="PCM_16")
    (project.sources_dir / name).write_bytes(project.path(audio_file).read_bytes())
    data = project.path(audio_file).read_bytes()
    source = Source(id=source_id, name=name, file=f"sources/{name}", audio_file=audio_file,
                    sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data), imported_at="2026-11-22T00:00:00",
                    analysis={"duration_s": samples.size / rate})
    project.sources.append(source)
    project.save()
    return source


def voice_like(seconds: float, rate: int = RATE, seed: int = 0) -> np.ndarray:
    """A harmonic, syllable-modulated tone: not speech, but tonal like a voice (low spectral flatness)."""
    t = np.arange(int(seconds * rate)) / rate
    tone = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 6))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t + np.random.default_rng(seed).uniform(0, 6))
    return (0.2 * tone * envelope).astype(np.float32)


def words_for(text: str, start_ms: int, word_ms: int = 300, gap_ms: int = 100, probability: float = 0.9) -> list[Word]:
    """Evenly timed words for ``text`` starting at ``start_ms``."""
    out, t = [], start_ms
    for token in text.split():
        out.append(Word(t, t + word_ms, token, probability))
        t += word_ms + gap_ms
    return out


def segment(segment_id: str, source_id: str, start_ms: int, end_ms: int, text: str, **kwargs) -> Segment:
    if "words" not in kwargs:
        kwargs["words"] = tuple(words_for(text, start_ms + 50))
    return Segment(segment_id, source_id, start_ms, end_ms, text, **kwargs)


SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Please remember to bring your umbrella tomorrow morning.",
    "My grandmother planted tomatoes in the garden last spring.",
    "We watched the sunset from the top of the hill.",
    "The train to the city leaves at seven every evening.",
    "Reading a good book is the best way to relax.",
]


def spoken_sentences(folder: Path, sentences: list[str], gap_s: float = 0.8,
                     lead_s: float = 0.5) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """espeak-ng speaks each sentence; they are joined with ``gap_s`` of silence.

    Returns the 22 050 Hz mono samples and each sentence's (start_s, end_s) measured from the sound itself
    (espeak's own leading and trailing silence trimmed), i.e. the true sentence boundaries.
    """
    from alltalk_gui.testing.speech import synthesize

    folder.mkdir(parents=True, exist_ok=True)
    parts = [np.zeros(int(lead_s * RATE), np.float32)]
    bounds, t = [], lead_s
    for i, text in enumerate(sentences):
        x, rate = sf.read(synthesize(text, folder / f"sentence{i}.wav"), dtype="float32")
        assert rate == RATE
        loud = np.flatnonzero(np.abs(x) > 0.01)
        x = x[loud[0]:loud[-1] + 1]
        bounds.append((t, t + x.size / RATE))
        parts += [x, np.zeros(int(gap_s * RATE), np.float32)]
        t += x.size / RATE + gap_s
    return np.concatenate(parts), bounds


def make_vocab(path: Path) -> Path:
    """A small XTTS-style BPE vocabulary made with the tokenizers library: English letters and punctuation only."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(special_tokens=["[STOP]", "[UNK]", "[SPACE]", "[en]"], vocab_size=200,
                                  initial_alphabet=list("abcdefghijklmnopqrstuvwxyz.,!?'-"))
    tokenizer.train_from_iterator(["the quick brown fox jumps over the lazy dog."] * 5, trainer)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return path
