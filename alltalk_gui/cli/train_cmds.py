"""Training commands: ``train``, ``gpu``, ``make-test-model``, ``download-base-model``.

``train`` runs in this process for one device; ``--processes N`` starts N processes with ``accelerate launch``
(one per GPU, or N CPU processes with ``--cpu``) and follows their events file. Either way the events go to
``<project>/runs/<run>/events.jsonl`` (or ``--events FILE``) and a progress line shows step, epoch, loss,
samples/s and the time left. Ctrl+C asks the run to finish its step, save a checkpoint and stop, and says so; a
second Ctrl+C quits at once (:mod:`alltalk_gui.cli.train_interrupt`). ``--resume`` goes on from the last checkpoint.

Exit codes: 0 finished or stopped cleanly; 2 the inputs were rejected before training (nothing changed);
1 training failed after it started (its last checkpoint is kept); 130 quit by a second Ctrl+C (the same).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from alltalk_gui.cli import EXIT_OK, EXIT_USAGE, engines_in_words
from alltalk_gui.cli.train_interrupt import EXIT_INTERRUPTED, CtrlC, quit_note


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help=f"fine-tune {engines_in_words()} on a project's exported dataset")
    p.add_argument("dir", help="voice project folder (its dataset/ folder is the training input)")
    _engine_arg(p, "which model to fine-tune (default: the project's engine)", default=None)
    p.add_argument("--base-model", metavar="DIR", help="the engine's base-model folder (default: the one in the "
                   "app settings, which download-base-model sets)")
    p.add_argument("--profile", choices=("low", "medium", "high", "auto"),
                   help="memory profile: low (4 GB cards), medium (6-8 GB), high (12 GB), auto (picked for the "
                        "GPU found); --epochs and --set apply on top of it")
    p.add_argument("--epochs", type=int, help="passes over the training clips (default 10)")
    p.add_argument("--keep-last", type=int, metavar="N", help="how many recent checkpoints to keep (default 2; the "
                   "best one is kept besides): fewer need less disk space")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any TrainConfig field or option of the engine, by name, e.g. --set batch_size=4 --set "
                        "mixed_precision=bf16 (repeatable; 'alltalk-gui engines --options' lists each engine's)")
    p.add_argument("--run", metavar="NAME", help="run folder name under DIR/runs (default: a timestamp; with "
                   "--resume: the newest run)")
    p.add_argument("--resume", action="store_true", help="continue the run from its newest complete checkpoint")
    p.add_argument("--events", metavar="FILE", help="JSON-lines events file (default DIR/runs/RUN/events.jsonl)")
    p.add_argument("--processes", type=int, default=1, metavar="N",
                   help="train with N processes through 'accelerate launch' (one per GPU; CPU processes if no GPU)")
    p.add_argument("--accelerate-config", metavar="FILE",
                   help="with --processes: an 'accelerate config' file, e.g. one that switches on FSDP")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("stop", help="ask the training that runs in a project to save a checkpoint and end",
                       description="The training of a project may run on after the app that started it closed. This "
                       "asks it to finish its step, save a checkpoint and end (Resume continues from it later).")
    p.add_argument("dir", help="voice project folder")
    p.set_defaults(func=cmd_stop)

    p = sub.add_parser("gpu", help="list GPUs (and the CPU) with their free memory")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_gpu)

    p = sub.add_parser("download-base-model", help=f"download the base model of {engines_in_words()} from the Hugging Face Hub "
                       "(after accepting its licence)")
    p.add_argument("dir", help="folder to download into (an interrupted download resumes)")
    _engine_arg(p, "which base model")
    p.add_argument("--repo", default=None, help="another Hub repository to download from (for an engine whose "
                   "download takes one: 'alltalk-gui engines' shows its default)")
    p.add_argument("--revision", default=None, help="branch, tag or commit (default main)")
    p.add_argument("--accept-licence", action="store_true", help="accept the licence without asking (records it)")
    p.set_defaults(func=cmd_download)

    p = sub.add_parser("make-test-model", help="write a tiny random base model (for tests; not a voice)")
    p.add_argument("dir", help="folder to write the model into (the files of the engine's base model)")
    _engine_arg(p, "which model")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_make_test_model)


def _engine_arg(p: argparse.ArgumentParser, help_text: str, default: str | None = "") -> None:
    """``--engine``: a registered engine's name or one of its aliases, stored as the registry name (default: the
    engine new projects start with, unless ``default`` is None: then the command decides)."""
    from alltalk_gui.cli.engine_cmds import engine_type
    from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, engine_names

    if default == "":
        default = DEFAULT_ENGINE
        help_text += f" (default {DEFAULT_ENGINE})"
    p.add_argument("--engine", type=engine_type, default=default, metavar="|".join(engine_names()), help=help_text)


# -- train -------------------------------------------------------------------------------------------------------------

def _build_config(args: argparse.Namespace):
    from alltalk_gui.core import app_settings
    from alltalk_gui.core.engine_api.engine import get_engine, language_note
    from alltalk_gui.core.engine_api.shared_files import in_words
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.config import ConfigError
    from alltalk_gui.core.training.run_config import build_train_config
    from alltalk_gui.core.training.run_folders import RunNameError, check_new_run_name, check_run_name, new_run_name, \
        newest_run_with_checkpoint

    project = VoiceProject.open(args.dir)  # ProjectError -> exit 2 with its message
    engine = get_engine(args.engine or project.engine)
    if engine.name != project.engine:  # the project's choice from now on: its clips and dataset follow
        from alltalk_gui.cli.engine_cmds import switch

        switch(project, engine.name)  # says what changed, the dataset's rate included
    else:
        from alltalk_gui.core.dataset.engine_switch import dataset_note

        dataset_problem = dataset_note(project)
        if dataset_problem:
            print(dataset_problem)
    base = args.base_model or app_settings.get(engine.base_model_setting)
    if not base:
        raise ConfigError(f"No base model: pass --base-model DIR (a {engine.title} folder with "
                          f"{in_words(engine.base_model_files)}), or fetch one with 'alltalk-gui "
                          f"download-base-model DIR --engine {engine.name}'.")
    profile = getattr(args, "profile", None)
    devices = []
    if profile:
        from alltalk_gui.core.machine.gpu import list_devices

        devices = list_devices()
    given = {"epochs": args.epochs, "keep_last": getattr(args, "keep_last", None)}
    built = build_train_config(project, Path(base).expanduser().absolute(), profile=profile, devices=devices,
                               overrides={k: v for k, v in given.items() if v is not None} or None,
                               pairs=args.set, engine=engine.name)
    note = language_note(engine, project.language)
    if note:
        print(f"{engine.title}: {note}")
    if built.auto_reason:
        print(f"Profile (auto): {built.auto_reason}")
    for note in built.notes:
        print(f"Profile {built.profile}: {note}")
    if built.estimate_gib is not None:
        print(f"Profile {built.profile}: estimated peak {built.estimate_gib:.1f} GiB on {built.device.name} "
              f"({built.device.free_gib:.1f} GiB free).")
    config = built.config
    if args.run:
        try:
            name = check_run_name(args.run)  # checked before it becomes a path
            # A new run's name is held to the shorter limit; an existing run resumes under its own.
            config.run_name = name if (project.runs_dir / name).is_dir() else check_new_run_name(name)
        except RunNameError as exc:
            raise ConfigError(f"--run: {exc}") from None
    elif args.resume:
        newest = newest_run_with_checkpoint(project.runs_dir)
        if newest is None:
            raise ConfigError(f"--resume: {project.runs_dir} holds no run with checkpoints.")
        config.run_name = newest.name
    else:
        config.run_name = new_run_name()
    return config


def cmd_train(args: argparse.Namespace) -> int:
    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.core.training.config import ConfigError

    try:
        config = _build_config(args)
    except ConfigError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.processes < 1:
        print("alltalk-gui: --processes must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    _show_disk_plan(config)
    if args.processes == 1 and get_engine(config.engine).environment is None:
        return _train_here(config, args)
    # Several processes, or an engine whose model code runs in an environment of its own: a child trains.
    return _train_launched(config, args)


def _show_disk_plan(config) -> None:
    """What the run's checkpoints and an export will take against the free space; a warning (with the
    --keep-last that would fit) when it is not enough. The run itself stops cleanly if the disk fills up."""
    from alltalk_gui.core.training.disk_plan import plan_disk

    plan = plan_disk(config)
    if plan is None:
        return
    warning = plan.warning()
    if warning is None:
        print(f"Disk: {plan.summary()}.")
        return
    fewer = plan.keep_last_that_fits()
    hint = f" (--keep-last {fewer})" if fewer is not None else ""
    print(f"Warning: {warning}{hint}", file=sys.stderr)


def _train_here(config, args) -> int:
    """Train in this process, which holds the project's run lock meanwhile (it is the training process)."""
    from alltalk_gui.core.project.lock import RunLock, TrainingRunningError
    from alltalk_gui.core.training.runner import StopFlag, exit_code, run_to_sink

    try:
        run_lock = RunLock.hold(config.run_dir.parent.parent, os.getpid(), config.run_name)
    except TrainingRunningError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError:  # read-only media: the run itself will say it cannot write
        run_lock = None
    stop = StopFlag()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    stop.install()  # SIGTERM: a quiet stop request; Ctrl+C: the same, acknowledged, and a second one quits
    progress = Progress()
    ctrl_c = CtrlC(lambda: setattr(stop, "stopping", True), before_note=progress.close)
    signal.signal(signal.SIGINT, ctrl_c)
    events = []
    try:
        for event in run_to_sink(config, resume=args.resume, events_path=args.events, stop=stop,
                                 announce=progress.show):
            events.append(event)
            progress.show(event)
    except KeyboardInterrupt:  # the second Ctrl+C
        progress.close()
        print(quit_note(config.run_dir), file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        progress.close()
        if run_lock is not None:
            run_lock.release()
    return exit_code(events)


def _train_launched(config, args) -> int:
    """N processes under accelerate launch; this process only follows the events file. Ctrl+C reaches this
    process alone (the children run in their own process group) and asks them, through the run's STOP file, to
    checkpoint and exit together."""
    from alltalk_gui.core.training.events import Done
    from alltalk_gui.core.training.follow import EventsFollower, follow_process
    from alltalk_gui.core.training.launch import LaunchError, start_training
    from alltalk_gui.core.training.run_folders import EVENTS_FILE
    from alltalk_gui.core.training.runner import exit_code

    events_path = Path(args.events) if args.events else config.run_dir / EVENTS_FILE
    follower = EventsFollower(events_path)  # from the end: a resumed run's earlier events are not shown again
    progress = Progress()
    events = []

    def on_event(event) -> None:
        events.append(event)
        progress.show(event)

    try:
        child = start_training(config, resume=args.resume, processes=args.processes, events_path=events_path,
                               accelerate_config=args.accelerate_config, lower_priority=False)
    except LaunchError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return 1
    # The children are in a process group of their own, so a terminal's Ctrl+C, a closed terminal or a kill
    # reaches this process only: each becomes a stop request instead of orphaning them.
    asked = [sig for sig in ("SIGTERM", "SIGHUP", "SIGBREAK") if hasattr(signal, sig)]
    previous = {sig: signal.signal(getattr(signal, sig), _raise_interrupt) for sig in asked}
    ctrl_c = CtrlC(lambda: child.request_stop(signals=False), before_note=progress.close)
    previous["SIGINT"] = signal.signal(signal.SIGINT, ctrl_c)
    try:
        while True:
            try:
                code = follow_process(child.process, follower, on_event, poll_s=0.2)
                break
            except KeyboardInterrupt:
                if ctrl_c.presses > 1:  # the second Ctrl+C: end the processes now
                    child.kill()
                    child.process.wait()
                    progress.close()
                    print(quit_note(config.run_dir), file=sys.stderr)
                    return EXIT_INTERRUPTED
                child.request_stop(signals=False)  # the processes checkpoint and exit together
    finally:
        for sig, handler in previous.items():
            signal.signal(getattr(signal, sig), handler)
        progress.close()
        child.ended()
    if follower.skipped:
        print(f"alltalk-gui: {follower.skipped} unreadable line(s) in {events_path} were skipped.", file=sys.stderr)
    if code and not any(isinstance(e, Done) for e in events):
        print(f"alltalk-gui: the training processes exited with code {code}", file=sys.stderr)
        return 1
    return exit_code(events)


def cmd_stop(args: argparse.Namespace) -> int:
    """Write the running run's STOP file (its processes poll it once per step; no lock is needed for it)."""
    from alltalk_gui.core.training.launch import stop_running_training
    from alltalk_gui.core.training.run_folders import RunNameError

    root = Path(args.dir).expanduser().absolute()
    try:
        holder = stop_running_training(root)
    except RunNameError as exc:
        print(f"alltalk-gui: the run lock names no run of this project ({exc})", file=sys.stderr)
        return EXIT_USAGE
    if holder is None:
        print(f"No training is running in {root}.")
        return EXIT_OK
    print(f"Asked run {holder.run} (process {holder.pid}, since {holder.since}) to save a checkpoint and stop; it "
          "ends after its current step. Resume continues from that checkpoint.")
    return EXIT_OK


def _raise_interrupt(signum, frame):  # noqa: ARG001 - signal handler signature
    raise KeyboardInterrupt


class Progress:
    """One status line per step (redrawn in place on a terminal) and a summary at the end."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.epochs = 0
        self.first_step_time = None
        self.first_step = 0
        self.line_open = False

    def _print(self, text: str) -> None:
        if self.line_open:
            self.stream.write("\n")
            self.line_open = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def show(self, event) -> None:
        from alltalk_gui.core.training.event_text import event_text, step_text
        from alltalk_gui.core.training.events import Done, Started, Step

        if isinstance(event, Step):
            self._show_step(event, step_text)
            return
        if isinstance(event, Started):
            self.epochs = event.config.get("epochs", 0)
        text = event_text(event)
        if text is not None:
            self._print(text)
        if isinstance(event, Done) and str(getattr(event.reason, "value", event.reason)) == "stopped":
            self._print("Stopped: run again with --resume to go on." if event.last_checkpoint else
                        "Stopped before the first checkpoint: start the run again (there is nothing to resume).")

    def _show_step(self, event, step_text) -> None:
        now = time.time()
        if self.first_step_time is None:
            self.first_step_time, self.first_step = now - event.step_time_s, event.step - 1
        done = event.step - self.first_step
        eta = (now - self.first_step_time) / max(done, 1) * max(event.total_steps - event.step, 0)
        text = step_text(event, epochs=self.epochs, eta_s=eta)
        if self.tty:
            self.stream.write("\r" + text.ljust(90))
            self.stream.flush()
            self.line_open = True
        else:
            self._print(text)

    def close(self) -> None:
        if self.line_open:
            self.stream.write("\n")
            self.stream.flush()
            self.line_open = False


# -- gpu -----------------------------------------------------------------------------------------------------------

def cmd_gpu(args: argparse.Namespace) -> int:
    """Each GPU with its free memory and the other programs using it, then the CPU. Without a GPU, first about
    how long training takes on the CPU (the default settings on cpu_estimate.REFERENCE_MINUTES of audio)."""
    from alltalk_gui.core.machine.gpu import list_devices, other_use

    devices = list_devices()
    if args.json:
        print(json.dumps([d.to_dict() for d in devices], indent=2))
        return EXIT_OK
    if not any(d.kind == "cuda" for d in devices):
        from alltalk_gui.core.training.cpu_estimate import typical_run

        print(f"No CUDA GPU found: training runs on the CPU, {typical_run(devices[-1].cores).sentence()}.")
    for d in devices:
        if d.kind == "cuda":
            driver = f"  driver {d.driver}" if d.driver else ""
            print(f"cuda:{d.index}  {d.name}  {d.free_gib:.1f} / {d.total_gib:.1f} GiB free  "
                  f"compute {d.capability}  bf16 {'yes' if d.bf16 else 'no'}{driver}")
            others = other_use(d)
            if others:
                print(f"        {others[0].upper()}{others[1:]}")
            for p in d.processes:
                used = f"{p.used_gib:.1f} GiB" if p.used_gib is not None else "amount not reported"
                print(f"          {p.label_with_pid}  {used}")
        else:
            print(f"cpu    {d.name}  {d.cores} cores  RAM {d.free_gib:.1f} / {d.total_gib:.1f} GiB free")
        if d.warning:
            print(f"        Warning: {d.warning}")
    return EXIT_OK


# -- make-test-model -----------------------------------------------------------------------------------------------

def cmd_make_test_model(args: argparse.Namespace) -> int:
    from alltalk_gui.core.engine_api.engine import get_engine

    engine = get_engine(args.engine)
    folder = engine.make_test_model(args.dir, seed=args.seed)
    print(f"Wrote a tiny random {engine.title} test model to {folder} (for tests and smoke runs; it is not a voice).")
    return EXIT_OK


# -- download-base-model -------------------------------------------------------------------------------------------

def cmd_download(args: argparse.Namespace) -> int:
    from alltalk_gui.core import app_settings
    from alltalk_gui.core.engine_api.engine import BaseModelError, get_engine
    from alltalk_gui.core.engine_api.hub_files import DownloadError

    engine = get_engine(args.engine)
    if args.repo and not engine.download_repo:
        print(f"alltalk-gui: --repo does not apply to {engine.title}: it comes from its own repositories.",
              file=sys.stderr)
        return EXIT_USAGE
    if not engine.licence_accepted():
        print(f"{engine.licence.title}: {engine.licence.summary}")
        if args.accept_licence:
            engine.accept_licence()
        elif sys.stdin.isatty() and input("Type 'yes' to accept the licence: ").strip().lower() == "yes":
            engine.accept_licence()
        else:
            print("alltalk-gui: the licence was not accepted; nothing was downloaded.", file=sys.stderr)
            return EXIT_USAGE
    last = {"file": None}

    def progress(p) -> None:
        if p.file != last["file"]:
            last["file"] = p.file
            print(f"[{p.file_index}/{p.file_count}] {p.file}", flush=True)
        if p.done_bytes == p.total_bytes:
            print(f"    {p.total_bytes / 1e6:.1f} MB done", flush=True)

    try:
        info = engine.download_base_model(args.dir, progress, repo=args.repo, revision=args.revision)
    except (DownloadError, BaseModelError) as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return 1
    app_settings.set_value(engine.base_model_setting, str(Path(args.dir).expanduser().absolute()))
    print(f"{engine.title} base model ready in {info.folder} ({info.parameters / 1e6:.0f} M trainable parameters); "
          f"it is now the default for 'alltalk-gui train --engine {engine.name}'.")
    return EXIT_OK
