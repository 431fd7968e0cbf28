"""``checkpoints DIR``: a project's runs and checkpoints with the disk space each run takes, and freeing it
(``--keep-best RUN``, ``--delete-run RUN``). Listing imports neither torch nor an engine, so it answers at once."""

from __future__ import annotations

import argparse
import sys

from alltalk_gui.cli import EXIT_OK, EXIT_USAGE
from alltalk_gui.core.project.folder import VoiceProject

ALL = "all"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("checkpoints", help="list a project's training runs and checkpoints with the disk space they "
                                           "take, and free it (--keep-best, --delete-run)")
    p.add_argument("dir", help="project folder")
    p.add_argument("--keep-best", action="append", default=[], metavar="RUN",
                   help=f"delete every checkpoint of RUN but the one Preview and Export use (the judge's pick, else "
                        f"the lowest eval loss, else the latest); '{ALL}' for every run. Repeatable")
    p.add_argument("--delete-run", action="append", default=[], metavar="RUN",
                   help="delete the run RUN with all its checkpoints. Repeatable")
    p.add_argument("--yes", action="store_true", help="do not ask before deleting")
    p.set_defaults(func=cmd_checkpoints)


def cmd_checkpoints(args: argparse.Namespace) -> int:
    if args.keep_best or args.delete_run:
        return _free_space(args)
    from alltalk_gui.core.machine.disk import free_bytes, size_text
    from alltalk_gui.core.training.run_folders import runs_dir
    from alltalk_gui.core.voice.judge.scores import read_scores
    from alltalk_gui.core.voice.run_space import other_space, other_space_sentence, runs_on_disk, thinnable

    project = VoiceProject.open(args.dir)
    runs = runs_on_disk(project.root)[::-1]  # oldest first: the newest ends next to the prompt
    if not any(run.checkpoints for run in runs):
        print("No training checkpoints yet. Train first: alltalk-gui train DIR")
        return EXIT_OK
    for run in runs:
        print(_run_line(run))
        judged = {s.step: s for s in read_scores(run.folder)}
        for c in run.checkpoints:
            mark = " (best)" if run.best is not None and run.best.path == c.path else ""
            heard = f"\n      judge: {judged[c.step].summary()}" if c.step in judged else ""
            print(f"  {c.label}{mark}\n      {c.path}{heard}")
    total = sum(run.size_bytes for run in runs)
    print(f"\nThe runs take {size_text(total)} in {runs_dir(project.root)}; "
          f"{size_text(free_bytes(project.root))} free on that disk. {other_space_sentence(other_space(project))}")
    spare = thinnable(runs)
    if spare:
        freed = sum(run.freed_by_keeping_best for run in spare)
        print(f"To free {size_text(freed)}, keep only each run's best checkpoint: alltalk-gui checkpoints DIR "
              f"--keep-best {ALL} (or delete a whole run: --delete-run RUN).")
    return EXIT_OK


def _run_line(run) -> str:
    from alltalk_gui.core.machine.disk import size_text

    count = len(run.checkpoints)
    facts = [run.engine or "no checkpoint", run.state, f"{count} checkpoint{'s' * (count != 1)}", size_text(run.size_bytes)]
    uses = f"; Preview and Export use step {run.best.step}" if run.best is not None else ""
    return f"{run.name} ({', '.join(facts)}){uses}"


def _free_space(args: argparse.Namespace) -> int:
    """Delete what was asked, after saying what and asking (unless --yes), holding the project's lock."""
    from alltalk_gui.core.machine.disk import size_text
    from alltalk_gui.core.project.lock import ProjectLock
    from alltalk_gui.core.voice.run_space import free_space, plan_freeing

    project = VoiceProject.open(args.dir)
    with ProjectLock.acquire(project.root, "alltalk-gui checkpoints"):
        plan = plan_freeing(project.root, delete=args.delete_run,
                            keep_best=[name for name in args.keep_best if name != ALL], every_run=ALL in args.keep_best)
        if not plan.steps():
            print("Nothing to free: each run named has only the checkpoint Preview and Export use.")
            return EXIT_OK
        print("This will " + "; ".join(plan.steps()) + ". Deleted checkpoints cannot be brought back.")
        if not _confirmed(args):
            print("Nothing was deleted.")
            return EXIT_USAGE
        freed = free_space(project.root, plan)
        print(f"Freed {size_text(freed.bytes)}.")
        for problem in freed.problems:
            print(f"warning: {problem}", file=sys.stderr)
    return EXIT_OK


def _confirmed(args: argparse.Namespace) -> bool:
    if args.yes:
        return True
    if not sys.stdin.isatty():
        print("alltalk-gui: add --yes to delete without being asked (standard input is not a terminal).",
              file=sys.stderr)
        return False
    return input("Delete? [y/N] ").strip().lower() in ("y", "yes")
