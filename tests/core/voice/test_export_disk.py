"""Issue 29 item 2 for the model export: a disk without room refuses before writing, and a write that fails midway
is undone; the message says where, about how much is needed and how much is free, and an earlier export of the
same name is as it was.

On a real small file system (a tmpfs as the output folder) where this machine allows one: its bytes lowered (the
check before writing refuses) or its number of files (a file of the new export fails midway). Elsewhere a file
copy of the export stops halfway with ENOSPC.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from pathlib import Path

import pytest

from alltalk_gui.core.training.checkpoints import resolve_checkpoint
from alltalk_gui.core.voice.export import ExportError, ExportOptions, export_voice
from tests.small_filesystem import tmpfs, tmpfs_available
from tests.trained_voice import trained_voice

needs_tmpfs = pytest.mark.skipif(not tmpfs_available(), reason="mounting a tmpfs needs root (CAP_SYS_ADMIN)")
OPTIONS = dict(format="coqui", name="voice", overwrite=True)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return resolve_checkpoint(trained_voice(tmp_path_factory).project, "best")


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _assert_earlier_export_kept(out: Path, before: dict[str, str]) -> None:
    assert _digests(out / "voice") == before
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no staging or set-aside folder


@needs_tmpfs
def test_no_room_for_the_export_is_refused_before_writing(tmp_path, checkpoint):
    with tmpfs(tmp_path / "models", size=256 << 20) as fs:
        out = tmp_path / "models"
        export_voice(checkpoint, out, ExportOptions(**OPTIONS))
        before = _digests(out / "voice")
        used, _ = fs.used()
        fs.remount(size=used + (1 << 20))
        with pytest.raises(ExportError, match=f"Not enough free space in {out}: the export needs about .* MB and "
                                              ".* are free"):
            export_voice(checkpoint, out, ExportOptions(**OPTIONS))
        _assert_earlier_export_kept(out, before)


@needs_tmpfs
def test_a_real_disk_that_fills_midway_undoes_the_export(tmp_path, checkpoint):
    with tmpfs(tmp_path / "models", size=256 << 20) as fs:
        out = tmp_path / "models"
        export_voice(checkpoint, out, ExportOptions(**OPTIONS))
        before = _digests(out / "voice")
        _, inodes = fs.used()
        fs.remount(inodes=inodes + 3)  # the staging folder, model.pth and config.json; then no room
        with pytest.raises(ExportError) as caught:
            export_voice(checkpoint, out, ExportOptions(**OPTIONS))
        message = str(caught.value)
        assert message.startswith(f"The export voice could not be written to {out}: the disk is full (about ")
        assert " MB needed there, " in message and "but no room for more files" in message
        assert "It was undone: the folder that was there before is as it was. Free some space" in message
        _assert_earlier_export_kept(out, before)


@pytest.mark.skipif(tmpfs_available(), reason="the tests on a real small file system run instead")
def test_a_copy_that_fails_midway_undoes_the_export(tmp_path, checkpoint, monkeypatch):
    out = tmp_path / "models"
    export_voice(checkpoint, out, ExportOptions(**OPTIONS))
    before = _digests(out / "voice")
    real = shutil.copy2

    def copy2(src, dst, *args, **kwargs):
        if Path(src).name == "vocab.json":
            Path(dst).write_bytes(Path(src).read_bytes()[:100])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(shutil, "copy2", copy2)
    with pytest.raises(ExportError, match=f"The export voice could not be written to {out}: the disk is full "
                                          r"\(about .* needed there, .* free\)\. It was undone: the folder that was "
                                          "there before is as it was"):
        export_voice(checkpoint, out, ExportOptions(**OPTIONS))
    _assert_earlier_export_kept(out, before)


def test_an_f5_weights_write_that_fails_midway_undoes_the_export(tmp_path, monkeypatch):
    """F5-TTS's export goes the same way (its weights are written by safetensors)."""
    pytest.importorskip("f5_tts", reason="f5-tts is not installed: pip install --no-deps f5-tts==1.1.22")
    import safetensors.torch
    import torch

    from alltalk_gui.core.engines.f5.export import F5ExportError, export_f5
    from alltalk_gui.core.engines.f5.model import export_state, load_f5
    from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5

    base = build_tiny_f5(tmp_path / "tiny_f5")
    cfm, info = load_f5(base)
    target = tmp_path / "out" / "voice"
    export_f5(export_state(cfm), info.vocab, info.arch, base / "vocos", target, step=1, alltalk=False)
    before = _digests(target)

    def save_file(tensors, filename, metadata=None):
        data = safetensors.torch.save(tensors, metadata=metadata)
        Path(filename).write_bytes(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(filename))

    monkeypatch.setattr(safetensors.torch, "save_file", save_file)
    with torch.no_grad():
        next(cfm.parameters()).add_(1.0)
    with pytest.raises(F5ExportError, match="The export voice could not be written to .*: the disk is full .*It was "
                                            "undone: the folder that was there before is as it was"):
        export_f5(export_state(cfm), info.vocab, info.arch, base / "vocos", target, step=2, alltalk=False,
                  overwrite=True, needed=10 << 20)
    assert _digests(target) == before and [p.name for p in target.parent.iterdir()] == ["voice"]
