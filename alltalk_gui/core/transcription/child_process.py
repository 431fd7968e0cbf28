"""Run the speech recogniser in a child process, so that Cancel stops it at once.

A Whisper call cannot be interrupted from outside while it is inside a long model step (a 30-second window of
large-v3 on a CPU takes tens of seconds). In a child process it can: the parent polls the stop flag ten times a
second and terminates the child when it is set. The child also takes the model's memory (RAM or VRAM) with it
when it ends, which matters before training starts on the same GPU.

The child only recognises: it reads the working copies and sends back word timelines. The parent keeps the
project and does all writing, so a terminated child can never leave a half-written file.

Messages, child to parent: ("loading",), ("progress", file index, fraction), ("result", source id, Recognised),
("failed", source name, reason), ("error", exception class name, message), ("done",).

The ``spawn`` start method is used everywhere (a forked child would inherit the GUI's threads and CUDA state).
A frozen (PyInstaller) app must call ``multiprocessing.freeze_support()`` at start-up for this to work.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
from pathlib import Path
from typing import Any, Callable, MutableMapping

from alltalk_gui.core.transcription.types import Cancelled, Recognised, StopCallback, TranscribeOptions, TranscriptionError
from alltalk_gui.core.transcription.model_files import ModelError, ModelNotDownloaded, UnknownModel, resolve

_POLL_S = 0.1
_TERMINATE_GRACE_S = 2.0


def run_in_worker(project: Any, options: TranscribeOptions, report: Any,
                  stop: StopCallback) -> tuple[dict[str, Recognised], list[tuple[str, str]]]:
    """Transcribe every source of ``project`` in a child process; see the module docstring.

    Raises:
        Cancelled: ``stop()`` became true (the child has been terminated when this is raised).
        TranscriptionError / whisper_models.ModelError: as raised in the child, or the child died.
    """
    jobs = [(i, s.id, s.name, str(project.path(s.audio_file))) for i, s in enumerate(project.sources)]
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child_main, args=(send, options, jobs), daemon=True,
                            name="alltalk-transcription")
    child.start()
    send.close()  # the parent's copy: without this, recv() would not notice the child's end
    results: dict[str, Recognised] = {}
    failures: list[tuple[str, str]] = []
    try:
        while True:
            if stop():
                raise Cancelled("Transcription stopped; the previous transcript was kept.")
            if not receive.poll(_POLL_S):
                if not child.is_alive() and not receive.poll(0):
                    raise TranscriptionError(f"The transcription process ended unexpectedly (exit code "
                                             f"{child.exitcode}); it may have run out of memory.")
                continue
            try:
                message = receive.recv()
            except EOFError:
                continue  # the child closed its end; the next round reports how it ended
            kind = message[0]
            if kind == "loading":
                report.emit("loading", 0, 0.0)
            elif kind == "progress":
                report.emit("transcribing", message[1], message[2])
            elif kind == "result":
                results[message[1]] = message[2]
            elif kind == "failed":
                failures.append((message[1], message[2]))
            elif kind == "error":
                _raise_from_child(message[1], message[2], options)
            elif kind == "done":
                return results, failures
    finally:
        _end(child)
        receive.close()


def _end(child: Any) -> None:
    if child.is_alive():
        child.terminate()
        child.join(_TERMINATE_GRACE_S)
    if child.is_alive():
        child.kill()
    child.join()


def _raise_from_child(kind: str, message: str, options: TranscribeOptions) -> None:
    if kind == "ModelNotDownloaded" and options.model:
        resolved = resolve(options.backend, options.model, options.download_root)
        if resolved.download is not None:
            raise ModelNotDownloaded(resolved.download)
    if kind == "UnknownModel":
        raise UnknownModel(message)
    if kind in ("ModelError", "NoNetwork"):
        raise ModelError(message)
    raise TranscriptionError(message if kind == "TranscriptionError" else f"{kind}: {message}")


_dll_directories: list[Any] = []  # os.add_dll_directory handles: the directory stays searchable while held


def expose_torch_libraries(os_name: str = os.name, add_dll_directory: Callable[[str], Any] | None = None,
                           environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """On Windows, let CTranslate2 (faster-whisper) find the CUDA libraries that PyTorch's wheel brings.

    CTranslate2 loads cuBLAS 12 and cuDNN 9 (``cublas64_12.dll``, ``cudnn64_9.dll``) only when a model goes on
    the GPU, by name, through Windows' DLL search. The CUDA build of PyTorch ships exactly those in
    ``torch\\lib``, but nothing puts that folder on the search path unless torch itself is imported, so
    faster-whisper on CUDA failed with "cublas64_12.dll is not found". The folder is added both ways Windows
    looks: ``os.add_dll_directory`` (for loads that ask for user directories) and ``PATH`` (plain
    ``LoadLibrary``). torch is located without importing it (that takes seconds). Returns the folder added, or
    None (not Windows, or no torch).
    """
    if os_name != "nt":
        return None
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = Path(list(spec.submodule_search_locations)[0]) / "lib"
    if not lib.is_dir():
        return None
    add = add_dll_directory or getattr(os, "add_dll_directory")
    _dll_directories.append(add(str(lib)))
    environ["PATH"] = str(lib) + os.pathsep + environ.get("PATH", "")
    return lib


def _child_main(send: Any, options: TranscribeOptions, jobs: list[tuple[int, str, str, str]]) -> None:
    from alltalk_gui.core.transcription.factory import load_for_whisper, make_transcriber

    try:
        send.send(("loading",))
        expose_torch_libraries()  # before CTranslate2 loads: it needs cuBLAS from torch's folder on Windows
        transcriber = make_transcriber(options)
        language = None if options.language == "auto" else options.language
        for index, source_id, name, path in jobs:
            send.send(("progress", index, 0.0))
            try:
                samples = load_for_whisper(path, name)
            except TranscriptionError as exc:
                send.send(("failed", name, str(exc)))
                continue
            result = transcriber.transcribe(samples, language, lambda f, i=index: send.send(("progress", i, f)),
                                            lambda: False)
            send.send(("result", source_id, result))
            send.send(("progress", index, 1.0))
        send.send(("done",))
    except Exception as exc:  # every failure goes back to the parent, which raises it there
        send.send(("error", type(exc).__name__, str(exc)))
    finally:
        send.close()
