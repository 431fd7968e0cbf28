"""Switching a project's engine: its clips are judged anew, its dataset is written again, and the user is told what
changed.

The engine shapes the data: the longest clip, the text check, the dataset's sample rate. So a switch

1. rechecks every clip's flags with the new engine's checker. Flags are derived, never the truth: the clips, their
   text and every edit stay exactly as they were (switching back gives the old flags back), and the clip length
   range chosen for the transcript is kept;
2. records the new engine in project.json;
3. writes the dataset again at the new engine's rate when the project has one made from its clips, leaving out the
   clips the new engine refuses (named, to be fixed on the Transcribe & Edit step) and reporting progress, since a
   long project's re-export takes a while.

:func:`plan_switch` describes all of it before anything changes (what a confirmation shows); :func:`switch_engine`
does steps 1 and 2 and returns that description; :func:`rewrite_dataset` does step 3. The GUI runs step 1 on the
thread that owns the transcript (its editor updates through the list's change notices) and step 3 in a worker;
the command line runs them in a row. Nothing outside the project folder is read or written.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from alltalk_gui.core.dataset.export import ExportReport, export_dataset
from alltalk_gui.core.dataset.info import format_rate, mismatch, read_info
from alltalk_gui.core.engine_api.engine import Engine, engine_name, get_engine
from alltalk_gui.core.transcript.flags import TOO_LONG, UNENCODABLE
from alltalk_gui.core.transcript.segments import SegmentList


@dataclass(frozen=True)
class EngineSwitch:
    """What a switch from ``old`` to ``new`` changes: clips the new engine refuses that the old one did not (by flag
    code), clips it takes that the old one refused, and what happens to the dataset."""

    old: Engine
    new: Engine
    now_refused: dict[str, tuple[str, ...]] = field(default_factory=dict)   # flag code -> clip ids
    now_accepted: dict[str, tuple[str, ...]] = field(default_factory=dict)  # flag code -> clip ids
    dataset_rate: int | None = None  # the rate of the dataset there now; None: there is none
    rewrite: bool = False            # the dataset is written again (it was made from the clips)
    flags_changed: Any = None        # after switch_engine: the Change of the clips whose flags changed

    @property
    def changes_anything(self) -> bool:
        return self.old.name != self.new.name

    def messages(self, dataset: bool = True) -> list[str]:
        """What changed, one sentence each, in the words a user reads (the CLI prints them, the GUI shows them);
        ``dataset`` False leaves out what happens to the dataset (said once it is done)."""
        if self.changes_anything:
            out = [f"The project now trains with {self.new.title} instead of {self.old.title}."]
        else:
            out = [f"The project already trains with {self.new.title}."]
        for code, ids in self.now_refused.items():
            them = "them" if len(ids) > 1 else "it"
            out.append(f"{_clips(len(ids))} {_now_refused(code, self.new, len(ids) > 1)}: {_listed(ids)}. Until "
                       f"{them} {'are' if len(ids) > 1 else 'is'} fixed on the Transcribe & Edit step, the dataset "
                       f"leaves {them} out.")
        for code, ids in self.now_accepted.items():
            out.append(f"{_clips(len(ids))} that {_was_refused(code, self.old, len(ids) > 1)} "
                       f"{'fit' if len(ids) > 1 else 'fits'} {self.new.title}: {_listed(ids)}.")
        rate = format_rate(self.new.sample_rate)
        if not dataset:
            return out
        if self.rewrite:
            was = f" (it was {format_rate(self.dataset_rate)})" if self.dataset_rate not in (None,
                                                                                        self.new.sample_rate) else ""
            out.append(f"The dataset will be written again at {rate}{was}, from the recordings.")
        elif self.dataset_rate is None and self.changes_anything:
            out.append(f"The dataset will be written at {rate} when you export it.")
        elif self.dataset_rate != self.new.sample_rate:
            out.append(f"The dataset in dataset/ was not made from this project's clips, so it stays as it is, at "
                       f"{format_rate(self.dataset_rate)}; {self.new.title} trains at {rate} (it resamples the clips, "
                       "losing what lies above its band).")
        return out


def plan_switch(project: Any, name: str, segments: SegmentList | None, vocab_file: Any = None) -> EngineSwitch:
    """What switching ``project`` to engine ``name`` would change; nothing is changed.

    Args:
        segments: the project's clips as they are now (None: it has none yet).
        vocab_file: the new engine's base-model vocabulary, for its exact text check.

    Raises:
        alltalk_gui.core.engine_api.engine.EngineError: no engine has that name.
    """
    old, new = get_engine(project.engine), get_engine(engine_name(name))
    refused: dict[str, list[str]] = {}
    accepted: dict[str, list[str]] = {}
    if segments is not None and old.name != new.name:
        after = SegmentList(list(segments.segments), checker=segments.checker.for_engine(new.name, vocab_file),
                            source_order=list(segments.source_order))  # in memory: nothing is saved
        after.recheck()
        for clip in segments:
            if clip.deleted:
                continue
            was = {f.code for f in clip.blocking_flags}
            now = {f.code for f in after[clip.id].blocking_flags}
            for code in sorted(now - was):
                refused.setdefault(code, []).append(clip.id)
            for code in sorted(was - now):
                accepted.setdefault(code, []).append(clip.id)
    info = read_info(project.dataset_dir)
    # Written again when the engine changes, or when the dataset does not fit the engine it has (a project from
    # before datasets followed the engine's rate: switching to the engine it has brings its dataset up to date).
    stale = old.name != new.name or mismatch(project.dataset_dir, new) is not None
    return EngineSwitch(old, new, {k: tuple(v) for k, v in refused.items()}, {k: tuple(v) for k, v in accepted.items()},
                        info.sample_rate if info is not None else None,
                        rewrite=stale and info is not None and segments is not None and len(segments) > 0)


def switch_engine(project: Any, name: str, segments: SegmentList | None, vocab_file: Any = None, *,
                  plan: EngineSwitch | None = None, notify: bool = True) -> EngineSwitch:
    """Recheck ``segments`` for engine ``name`` and make it ``project``'s engine (steps 1 and 2).

    Args:
        segments: the project's open list (the GUI's, or one the caller opened and closes); None when the project
            has no clips yet. Its checker is replaced by the new engine's, keeping the language and length range,
            and every flag is final when this returns (the dataset is written next): call it off the GUI thread.
        vocab_file: the new engine's base-model vocabulary, for its exact text check.
        plan: :func:`plan_switch`'s answer, when the caller already has it (asked the user with it).
        notify: False leaves telling the list's listeners to the caller, on the list's thread
            (``segments.announce(result.flags_changed)``).

    Returns:
        What changed; :attr:`EngineSwitch.rewrite` says whether :func:`rewrite_dataset` should run next.

    Raises:
        EngineError: no engine has that name. ProjectError: the project is open read-only (nothing changed).
    """
    project.check_writable()
    if plan is None:
        if segments is not None and not segments.is_checked_with_current_checker():
            segments.recheck(notify=notify)  # saved under other terms (an older version): compare with today's
        plan = plan_switch(project, name, segments, vocab_file)
    if not plan.changes_anything:
        return plan  # the dataset may still need writing again (plan.rewrite)
    changed = None
    if segments is not None:  # journalled; the listeners (the editor) learn which clips changed
        changed = segments.follow_engine(plan.new.name, vocab_file, complete=True, notify=notify)
    project.choose_engine(plan.new.name)
    return replace(plan, flags_changed=changed)


def rewrite_dataset(project: Any, segments: SegmentList,
                    progress: Callable[[int, int], None] | None = None) -> ExportReport:
    """Write the dataset again for the project's (new) engine, leaving out and naming the clips it refuses (step 3).

    Raises:
        DatasetError: fewer than two usable clips, or a clip's audio is missing; the previous dataset is kept.
    """
    return export_dataset(project, segments=segments, skip_refused=True, progress=progress)


def dataset_note(project: Any) -> str | None:
    """A sentence when the project's dataset does not fit its engine (another engine's, another rate); else None."""
    return mismatch(project.dataset_dir, get_engine(project.engine))


def _clips(n: int) -> str:
    return f"{n} clip{'s' if n != 1 else ''}"


def _listed(ids: tuple[str, ...], shown: int = 6) -> str:
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def _now_refused(code: str, engine: Engine, plural: bool) -> str:
    are = "are" if plural else "is"
    if code == TOO_LONG:
        return f"{are} now too long for {engine.title} (over {engine.max_clip_ms / 1000:.1f} s)"
    if code == UNENCODABLE:
        return f"now {'have' if plural else 'has'} text {engine.title} cannot read"
    return f"{are} now refused for {engine.title} ({code})"


def _was_refused(code: str, engine: Engine, plural: bool) -> str:
    was = "were" if plural else "was"
    if code == TOO_LONG:
        return f"{was} too long for {engine.title}"
    if code == UNENCODABLE:
        return f"had text {engine.title} could not read"
    return f"{was} refused for {engine.title} ({code})"
