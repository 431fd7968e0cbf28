"""Run in a fresh process by test_first_edit_is_quick.py: open a long project in the main window as a user
would, edit two clips' text at once (while the text check's child process is still importing coqui), time each
edit, then wait for the check's answers and report the clips' flags. A fresh process, so that nothing a test
imported earlier (coqui, torch) makes the measurement kinder than a user's first start.

    python -m tests.gui.open_and_edit PROJECT_DIR   ->   one JSON line on stdout
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
EDITS = ("An edit made at once ☺ with a smile.", "A second edit right after it.", "A third one, as quick.",
         "Four edits in a row now.", "And a fifth edit to end with.")


def run_queue_wait_ms() -> float:
    """How long this thread has waited, ready to run, for a CPU the OS gave to other programs (Linux schedstat;
    0 where it is not available). Blocking on a lock, the GIL or a disk is not in it."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e6
    except (OSError, ValueError, IndexError):
        return 0.0


def main(folder: str, settings_dir: str) -> dict:
    from PySide6.QtCore import Qt

    from alltalk_gui.gui.app import create_application
    from alltalk_gui.gui.main_window import MainWindow
    from alltalk_gui.gui.settings import use_settings_folder
    from alltalk_gui.gui.transcript.segments_model import Column

    app = create_application()
    use_settings_folder(settings_dir)
    window = MainWindow()
    window.show()
    assert window.open_project(folder)
    window.sidebar.setCurrentRow(1)
    app.processEvents()
    page = window.transcript_page
    editor, segments = page.editor, page.segments
    answered_before = [segments.checker.text_checker.known(text) for text in EDITS]
    times_ms, cpu_ms, queued_ms = [], [], []
    for row, text in enumerate(EDITS):
        index = editor.model.index(row, Column.TEXT)
        queued, started, cpu = run_queue_wait_ms(), time.perf_counter(), time.thread_time()
        editor.model.setData(index, text, Qt.ItemDataRole.EditRole)  # what committing the in-place editor does
        times_ms.append((time.perf_counter() - started) * 1000)
        cpu_ms.append((time.thread_time() - cpu) * 1000)
        queued_ms.append(run_queue_wait_ms() - queued)
    first = editor.model.segment(0)
    saved_at_once = first.text == EDITS[0]
    flags_before = list(first.flag_codes)
    deadline = time.monotonic() + 300
    while segments.text_checks_pending:
        if time.monotonic() > deadline:
            break
        app.processEvents()
        time.sleep(0.01)
    app.processEvents()
    flags_after = list(segments[first.id].flag_codes)
    shown = editor.model.index(0, Column.FLAGS).data()
    window.close()
    return {"edit_ms": times_ms, "edit_cpu_ms": cpu_ms, "edit_run_queue_ms": queued_ms, "answered_before": answered_before,
            "torch_in_this_process": "torch" in sys.modules,
            "saved_at_once": saved_at_once, "flags_before": flags_before, "flags_after": flags_after,
            "flags_shown_after": shown, "clips": len(segments)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
    sys.stdout.flush()
    os._exit(0)  # the warm-up thread may still hold imports; nothing else is left to do
