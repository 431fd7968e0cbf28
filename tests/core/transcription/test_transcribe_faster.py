"""Real transcription accuracy: espeak-ng sentences through faster-whisper tiny.en (int8, CPU), then into clips."""

from __future__ import annotations

import re
import threading

import jiwer
import pytest

from alltalk_gui.core.transcript.segments import SegmentList, read_file
from alltalk_gui.core.transcription.transcribe import (Cancelled, TranscribeOptions, TranscriptionError, make_transcriber,
                                         transcribe_project)
from alltalk_gui.testing.speech import espeak_available
from alltalk_gui.testing.tiny_whisper import faster_tiny_en
from tests.core.transcript.test_segments_support import SENTENCES, add_source, make_project, spoken_sentences

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")


@pytest.fixture(scope="module")
def tiny_en():
    return make_transcriber(TranscribeOptions(backend="faster-whisper", model=str(faster_tiny_en()), language="en",
                                              device="cpu"))


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    return spoken_sentences(tmp_path_factory.mktemp("espeak"), SENTENCES)


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s']", " ", text.lower()).split())


def test_word_error_rate_and_clip_boundaries(tmp_path, tiny_en, speech):
    samples, truth = speech
    project = make_project(tmp_path)
    add_source(project, "sentences.wav", samples)
    seen = []
    report = transcribe_project(project, TranscribeOptions(backend="faster-whisper", language="en"),
                                progress=seen.append, transcriber=tiny_en)

    clips = list(SegmentList.open(project))
    wer = jiwer.wer(normalise(" ".join(SENTENCES)), normalise(" ".join(c.text for c in clips)))
    print(f"WER {wer:.3f}; {report.audio_seconds:.1f} s of audio in {report.seconds:.2f} s")
    assert wer < 0.25
    assert len(clips) == len(SENTENCES)  # one clip per sentence: each is 2.5-3.5 s, cut at the sentence ends
    errors = [abs(c.start_ms / 1000 - s) for c, (s, _e) in zip(clips, truth)] + \
        [abs(c.end_ms / 1000 - e) for c, (_s, e) in zip(clips, truth)]
    print(f"clip boundaries: largest distance from the sentence boundaries {max(errors):.3f} s")
    assert max(errors) < 0.3, list(zip(clips, truth))
    meta = SegmentList.open(project).meta
    assert (meta["backend"], meta["model"], meta["device"]) == ("faster-whisper", str(faster_tiny_en()), "cpu")
    assert report.transcribed == ["sentences.wav"] and report.languages == {"sentences.wav": "en"}

    fractions = [p.overall_fraction for p in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert {p.stage for p in seen} == {"transcribing", "saving", "done"}
    assert any(p.eta_s is not None and p.eta_s > 0 for p in seen if p.stage == "transcribing")


def test_language_is_detected_when_not_given(tmp_path, speech):
    samples, _truth = speech
    project = make_project(tmp_path)
    add_source(project, "sentences.wav", samples[: 22050 * 8])
    auto = make_transcriber(TranscribeOptions(backend="faster-whisper", model=str(faster_tiny_en()),
                                              language="auto", device="cpu"))
    report = transcribe_project(project, TranscribeOptions(backend="faster-whisper"), transcriber=auto)
    assert report.languages == {"sentences.wav": "en"}


def test_cancel_from_another_thread_stops_and_keeps_the_old_transcript(tmp_path, tiny_en, speech):
    samples, _truth = speech
    project = make_project(tmp_path)
    for i in range(3):
        add_source(project, f"take{i}.wav", samples)
    project.segments_file.write_text('{"segments": []}\n', encoding="utf-8")
    stop = threading.Event()

    def progress(p):
        if p.file_index == 1 and p.file_fraction > 0:
            threading.Thread(target=stop.set).start()  # as a GUI Cancel button would, from another thread

    with pytest.raises(Cancelled):
        transcribe_project(project, progress=progress, should_stop=stop.is_set, transcriber=tiny_en)
    assert project.segments_file.read_text(encoding="utf-8") == '{"segments": []}\n'


def test_retranscribing_keeps_clips_of_failed_sources_and_a_backup(tmp_path, tiny_en, speech):
    samples, _truth = speech
    project = make_project(tmp_path)
    add_source(project, "one.wav", samples[: 22050 * 8])
    add_source(project, "two.wav", samples[22050 * 8:])
    transcribe_project(project, TranscribeOptions(language="en"), transcriber=tiny_en)
    first = SegmentList.open(project)
    first.set_text(next(s.id for s in first if s.source_id == "s002"), "An edit the user made.")
    edited = read_file(project.segments_file)["segments"]  # with the edit, still in the journal

    project.path(project.source("s002").audio_file).unlink()  # two.wav's working copy is gone
    report = transcribe_project(project, TranscribeOptions(language="en"), transcriber=tiny_en)
    assert report.transcribed == ["one.wav"] and report.failed[0][0] == "two.wav"
    again = SegmentList.open(project)
    assert "An edit the user made." in [s.text for s in again if s.source_id == "s002"]  # carried over
    assert len(set(again.ids())) == len(again)
    assert read_file(project.root / "segments.json.bak")["segments"] == edited

    project.sources = [s for s in project.sources if s.id != "s002"]  # two.wav removed from the project
    project.save()
    transcribe_project(project, TranscribeOptions(language="en"), transcriber=tiny_en)
    assert {s.source_id for s in SegmentList.open(project)} == {"s001"}


def test_bad_length_range_and_language_fail_before_any_work(tmp_path, tiny_en, speech):
    project = make_project(tmp_path)
    add_source(project, "one.wav", speech[0][: 22050 * 3])
    with pytest.raises(TranscriptionError, match="minimum must be above 0"):
        transcribe_project(project, TranscribeOptions(language="en"), transcriber=tiny_en, min_s=8, max_s=4)
    with pytest.raises(TranscriptionError, match="Unknown language 'english'"):
        transcribe_project(project, TranscribeOptions(language="english"), transcriber=tiny_en)
    with pytest.raises(TranscriptionError, match="Unknown transcription backend"):
        make_transcriber(TranscribeOptions(backend="whisper.cpp"))
    assert not project.segments_file.exists()
