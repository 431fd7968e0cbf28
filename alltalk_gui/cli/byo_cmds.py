"""Bring-your-own-transcript commands: ``import-dataset`` (a folder that already is a dataset) and
``known-text`` (the exact words of one recording, aligned onto its clips)."""

from __future__ import annotations

import argparse
import sys

from alltalk_gui.cli import EXIT_OK, EXIT_SOME_REJECTED, EXIT_USAGE
from alltalk_gui.core.project.folder import VoiceProject


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import-dataset", help="import a folder that already is a dataset (clips with their text)",
                       description="Import LJSpeech (metadata.csv + wavs/), coqui (metadata_train.csv / "
                       "metadata_eval.csv + wavs/) or AllTalk fine-tuning output: each row becomes a recording "
                       "with one clip carrying the row's text. Bad rows are reported one by one; the rest are "
                       "imported.")
    p.add_argument("dir", help="project folder")
    p.add_argument("folder", help="the dataset folder (or a folder up to two levels above its metadata)")
    p.set_defaults(func=cmd_import_dataset)


def cmd_import_dataset(args: argparse.Namespace) -> int:
    from alltalk_gui.core.dataset.byo_import import DatasetImportError, import_dataset
    from alltalk_gui.core.engines.xtts.text_check import base_model_vocab

    project = VoiceProject.open(args.dir)

    def progress(done: int, total: int, name: str) -> None:
        if name:
            print(f"[{done + 1}/{total}] {name}", flush=True)

    try:
        report = import_dataset(project, args.folder, vocab_file=base_model_vocab(), progress=progress)
    except DatasetImportError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"Found a {report.layout} dataset in {report.folder}.")
    if report.language and report.language != project.language:
        print(f"Note: its lang.txt says '{report.language}' but the project's language is {project.language}.")
    for problem in report.problems:
        print(f"  refused {problem}", file=sys.stderr)
    print(f"{len(report.imported)} clip(s) imported, {len(report.problems)} row(s) refused.")
    return EXIT_SOME_REJECTED if report.problems else EXIT_OK
