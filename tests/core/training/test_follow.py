"""Events files: written with \\n in binary, read by byte offsets, torn lines skipped and counted."""

from __future__ import annotations

import json

from alltalk_gui.core.training.events import Done, JsonlSink, Log, Started, Step
from alltalk_gui.core.training.follow import EventsFollower, follow_process, read_event_file
from alltalk_gui.core.training.run_folders import run_finished


def _step(n: int) -> Step:
    return Step(step=n, epoch=0, loss=1.0 / n, parts={"loss_text_ce": 0.1, "loss_mel_ce": 0.9}, lr=1e-5, grad_norm=1.0,
                samples_per_s=2.0, step_time_s=0.5, total_steps=10)


def _done(step: int, reason: str) -> Done:
    return Done(step=step, epoch=0, reason=reason, final_loss=0.5, best_eval_loss=None, best_checkpoint=None,
                last_checkpoint=None, elapsed_s=3.0)


def test_a_torn_line_then_a_resumed_run_reads_every_whole_event_and_counts_the_torn_one(tmp_path):
    path = tmp_path / "runs" / "r" / "events.jsonl"
    with JsonlSink(path) as sink:
        sink.write(_step(1))
        sink.write(_step(2))
    with open(path, "ab") as f:  # the power went off in the middle of step 3's line
        f.write(json.dumps(_step(3).to_dict()).encode()[:40])
    with JsonlSink(path) as sink:  # Resume: the next session appends
        sink.write(Log(level="info", message="Resumed from step_0000002 (step 2)."))
        sink.write(_step(3))
        sink.write(_done(3, "finished"))

    raw = path.read_bytes()
    assert raw.count(b"\n") == 6 and raw.endswith(b"\n")  # the resumed run began on a line of its own
    log = read_event_file(path)
    assert [type(e).__name__ for e in log.events] == ["Step", "Step", "Log", "Step", "Done"]
    assert log.skipped == 1
    assert run_finished(path.parent)  # the run's state still reads correctly


def test_lines_that_are_not_events_are_skipped_and_counted_by_every_reader(tmp_path):
    path = tmp_path / "events.jsonl"
    good = json.dumps(_step(1).to_dict())
    path.write_bytes(b"\n".join([good.encode(), b"{not json", b'{"type": "no_such_event"}', b'["a list"]',
                                 b'{"type": "step", "step": 1}', b"\xff\xfe", good.encode()]) + b"\n")
    log = read_event_file(path)
    assert len(log.events) == 2 and log.skipped == 5


def test_followed_by_byte_offsets_across_crlf_partial_lines_and_non_ascii(tmp_path):
    """A file with Windows line ends and multi-byte characters, read while it grows, line by line."""
    path = tmp_path / "events.jsonl"
    first = json.dumps(Log(level="info", message="Stimme von José – «prêt»").to_dict(), ensure_ascii=False)
    second = json.dumps(_step(1).to_dict())
    follower = EventsFollower(path)
    assert follower.poll() == []  # no file yet
    with open(path, "wb") as f:
        f.write(first.encode("utf-8") + b"\r\n")
        f.write(second.encode()[:25])  # half a line
    events = follower.poll()
    assert [e.message for e in events] == ["Stimme von José – «prêt»"]
    assert follower.offset == len(first.encode("utf-8")) + 2  # bytes, not characters
    with open(path, "ab") as f:
        f.write(second.encode()[25:] + b"\r\n")
    assert [e.step for e in follower.poll()] == [1]
    assert follower.offset == path.stat().st_size and follower.skipped == 0


def test_the_sink_writes_lf_only_and_a_follower_from_the_end_sees_only_new_events(tmp_path):
    path = tmp_path / "events.jsonl"
    with JsonlSink(path) as sink:
        sink.write(Log(level="info", message="first session"))
    follower = EventsFollower(path)  # a resumed run: its earlier events are not shown again
    with JsonlSink(path) as sink:
        sink.write(Log(level="info", message="second session"))
    assert [e.message for e in follower.poll()] == ["second session"]
    assert b"\r" not in path.read_bytes()


class _FakeProcess:
    """Exits after a few polls, writing one more event just before it does."""

    def __init__(self, path):
        self.path, self.polls = path, 0

    def poll(self):
        self.polls += 1
        if self.polls == 3:
            with JsonlSink(self.path) as sink:
                sink.write(_done(1, "finished"))
            return 0
        return None


def test_follow_process_reads_what_the_child_wrote_before_it_exited(tmp_path):
    path = tmp_path / "events.jsonl"
    with JsonlSink(path) as sink:
        sink.write(Started(run_dir=str(tmp_path), device="cpu", processes=1, train_clips=2, eval_clips=1,
                           steps_per_epoch=1, total_steps=1, start_step=0, start_epoch=0, trainable_parameters=1,
                           config={}))
    seen = []
    code = follow_process(_FakeProcess(path), EventsFollower(path, from_end=False), seen.append, poll_s=0.001)
    assert code == 0 and [type(e).__name__ for e in seen] == ["Started", "Done"]
