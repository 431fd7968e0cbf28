"""Event vocabularies are enums shared by writer and readers, and the JSON on disk keeps its old strings."""

from __future__ import annotations

import json

from alltalk_gui.core.training.events import (Checkpoint, CheckpointReason, Done, Error, ErrorKind, EventType,
                                              FinishReason, JsonlSink, Log, LogLevel, MicroBatch, MicroBatchCause,
                                              event_from_dict)
from alltalk_gui.core.training.follow import read_event_file


def _done(reason) -> Done:
    return Done(step=3, epoch=0, reason=reason, final_loss=1.5, best_eval_loss=None, best_checkpoint=None,
                last_checkpoint=None, elapsed_s=2.0)


def test_the_file_holds_the_old_strings_and_reads_back_as_enums(tmp_path):
    events = [Log(level=LogLevel.WARNING, message="w"), Error(kind=ErrorKind.DISK_FULL, message="full"),
              MicroBatch(cause=MicroBatchCause.OUT_OF_MEMORY, step=1, micro_batch=1, grad_accum=8, effective_batch=8,
                         message="m"),
              Checkpoint(step=3, epoch=0, path="p", reason=CheckpointReason.STOPPED), _done(FinishReason.STOPPED)]
    path = tmp_path / "events.jsonl"
    with JsonlSink(path) as sink:
        for event in events:
            sink.write(event)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(d["type"], d.get("level") or d.get("kind") or d.get("cause") or d.get("reason")) for d in lines] == [
        ("log", "warning"), ("error", "disk_full"), ("micro_batch", "out_of_memory"), ("checkpoint", "stopped"),
        ("done", "stopped")]
    back = list(read_event_file(path).events)
    assert back[-1].reason is FinishReason.STOPPED and back[0].level is LogLevel.WARNING
    assert back[1].kind is ErrorKind.DISK_FULL and back[3].reason is CheckpointReason.STOPPED
    assert [e.type for e in back] == [EventType.LOG, EventType.ERROR, EventType.MICRO_BATCH, EventType.CHECKPOINT,
                                      EventType.DONE]


def test_an_old_events_line_reads_and_compares_with_plain_strings():
    old = {"type": "done", "time": 1.0, "step": 5, "epoch": 1, "reason": "max_steps", "final_loss": 0.5,
           "best_eval_loss": None, "best_checkpoint": None, "last_checkpoint": None, "elapsed_s": 9.0}
    done = event_from_dict(old)
    assert done.reason is FinishReason.MAX_STEPS and done.reason == "max_steps" and done.reason.completed
    assert f"Done ({done.reason})" == "Done (max_steps)"


def test_a_word_from_a_newer_version_stays_a_string():
    done = event_from_dict({**_done("finished").to_dict(), "reason": "paused"})
    assert done.reason == "paused" and not isinstance(done.reason, FinishReason)


def test_only_finished_and_max_steps_are_complete():
    assert [r for r in FinishReason if r.completed] == [FinishReason.FINISHED, FinishReason.MAX_STEPS]


def test_loss_parts_travel_by_name_and_old_runs_fields_read_as_parts(tmp_path):
    from alltalk_gui.core.training.events import Eval, Step

    path = tmp_path / "events.jsonl"
    step = Step(step=1, epoch=0, loss=1.0, lr=1e-5, grad_norm=1.0, samples_per_s=1.0, step_time_s=1.0,
                total_steps=4, parts={"duration": 0.25, "codes": 0.75})
    with JsonlSink(path) as sink:
        sink.write(step)
    assert json.loads(path.read_text(encoding="utf-8"))["parts"] == {"duration": 0.25, "codes": 0.75}
    assert list(read_event_file(path).events)[0].parts == {"duration": 0.25, "codes": 0.75}
    # Lines written before the mapping: each part was a field of its own, None where the engine had none.
    old_step = {"type": "step", "time": 1.0, "step": 2, "epoch": 0, "loss": 1.5, "lr": 1e-5, "grad_norm": 1.0,
                "samples_per_s": 1.0, "step_time_s": 1.0, "total_steps": 4, "loss_text_ce": 0.01, "loss_mel_ce": 1.49}
    assert event_from_dict(old_step).parts == {"loss_text_ce": 0.01, "loss_mel_ce": 1.49}
    old_eval = {"type": "eval", "time": 1.0, "step": 0, "epoch": 0, "loss": 2.0, "clips": 3, "best": False,
                "loss_text_ce": None, "loss_mel_ce": None}
    assert event_from_dict(old_eval).parts == {}
