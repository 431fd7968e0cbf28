"""One wording for events: what the CLI prints and the Train page's log shows."""

from __future__ import annotations

import enum

from alltalk_gui.core.training.event_text import event_level, event_text, hms, step_text
from alltalk_gui.core.training.events import (
    Checkpoint,
    Done,
    Error,
    Eval,
    Log,
    Memory,
    MicroBatch,
    Started,
    Step,
)


def test_small_parameter_counts_are_written_out():
    from alltalk_gui.core.training.event_text import parameter_count

    assert parameter_count(441_018_563) == "441.0 M" and parameter_count(100_000) == "0.1 M"
    assert parameter_count(4096) == "4,096"  # LoRA on the tiny test model read "0.0 M"


def test_hms():
    assert hms(0) == "0:00:00" and hms(59.6) == "0:01:00" and hms(3725) == "1:02:05" and hms(36000) == "10:00:00"


def test_each_event_type_has_its_line():
    started = Started(run_dir="/p/runs/r", device="cpu:0", processes=2, train_clips=4, eval_clips=1,
                      steps_per_epoch=2, total_steps=4, start_step=0, start_epoch=0,
                      trainable_parameters=2_500_000, config={"epochs": 2})
    assert event_text(started) == ("Training 4 clips (1 eval) on cpu:0 x 2: 2 steps/epoch, 4 steps, 2.5 M trainable "
                                   "parameters. Run: /p/runs/r")
    assert event_text(Eval(step=2, epoch=0, loss=1.23456, parts={"loss_text_ce": 0.1, "loss_mel_ce": 1.1}, clips=1,
                           best=True)) == "Eval after epoch 1: loss 1.2346 (text_ce 0.1000, mel_ce 1.1000)  (best so far)"
    assert event_text(Eval(step=0, epoch=0, loss=3.5, clips=1, best=False)) == \
        "Eval of the base model (step 0): loss 3.5000"
    assert event_text(Checkpoint(step=2, epoch=0, path="/c/step_2", reason="epoch")) == \
        "Checkpoint (epoch) at step 2: /c/step_2"
    assert event_text(Log(level="warning", message="careful")) == "careful"
    assert event_text(Error(kind="dataset", message="bad clip")) == "Error (dataset): bad clip"
    assert event_text(Memory(step=1, stats={"rss": 1.0})) is None
    step = Step(step=3, epoch=1, loss=0.5, lr=1e-5, grad_norm=1.0, samples_per_s=2.5, step_time_s=0.4, total_steps=4)
    assert event_text(step) is None
    assert step_text(step, epochs=2, eta_s=61) == "step 3/4  epoch 2/2  loss 0.5000  2.50 samples/s  ETA 0:01:01"
    assert step_text(step) == "step 3/4  epoch 2  loss 0.5000  2.50 samples/s"
    # An engine's parts of the loss, whatever it calls them.
    step.parts = {"duration": 0.25, "codes": 0.125}
    assert step_text(step) == "step 3/4  epoch 2  loss 0.5000 (duration 0.2500, codes 0.1250)  2.50 samples/s"


def test_done_tells_losses_memory_and_checkpoints():
    done = Done(step=4, epoch=1, reason="finished", final_loss=0.25, best_eval_loss=None, best_checkpoint="/b",
                last_checkpoint="/l", elapsed_s=75, peak_memory_gib=1.5, estimated_memory_gib=2.0)
    assert event_text(done).splitlines() == [
        "Done (finished) after step 4 in 0:01:15: final loss 0.2500, best eval loss -.",
        "Peak memory: 1.50 GiB (estimated 2.00 GiB).", "Best checkpoint: /b", "Last checkpoint: /l"]


class _Reason(str, enum.Enum):
    STOPPED = "stopped"
    ERROR = "error"


def test_levels_and_enum_valued_fields_read_as_their_values():
    assert event_level(Error(kind="crash", message="x")) == "error"
    assert event_level(Log(level="warning", message="x")) == "warning"
    oom = MicroBatch(cause="out_of_memory", step=5, micro_batch=1, grad_accum=8, effective_batch=8, message="m")
    assert event_level(oom) == "warning"
    assert event_level(MicroBatch(cause="probe", step=0, micro_batch=4, grad_accum=2, effective_batch=8,
                                  message="m")) == "info"
    done = Done(step=1, epoch=0, reason=_Reason.STOPPED, final_loss=None, best_eval_loss=None,
                best_checkpoint=None, last_checkpoint=None, elapsed_s=1)
    assert event_text(done).startswith("Done (stopped) after step 1") and event_level(done) == "info"
    assert event_level(Done(step=1, epoch=0, reason=_Reason.ERROR, final_loss=None, best_eval_loss=None,
                            best_checkpoint=None, last_checkpoint=None, elapsed_s=1)) == "error"
