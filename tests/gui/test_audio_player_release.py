"""The player lets go of the file it played: Windows cannot replace, rename or delete a file held open, so a
take played once would otherwise block its regeneration and a checkpoint's sample the pruning of its folder."""

from __future__ import annotations

import numpy as np
import soundfile as sf

from alltalk_gui.core import atomic
from alltalk_gui.gui.common.audio_player import AudioPlayer


def _wav(path, seconds=0.2):
    sf.write(path, np.zeros(int(22050 * seconds), dtype="float32"), 22050)
    return path


def test_stop_lets_go_of_the_file(qtbot, tmp_path):
    take = _wav(tmp_path / "take.wav", seconds=5.0)
    player = AudioPlayer()
    player.play(take)
    assert player.holds() == str(take)
    player.stop()
    assert player.holds() == "" and player.current == ""
    atomic.copy_file(_wav(tmp_path / "new.wav"), take)  # the regenerated take goes in
    player.play(take)  # and plays again
    assert player.holds() == str(take)
    player.stop()


def test_the_end_of_playback_lets_go_of_the_file(qtbot, tmp_path):
    take = _wav(tmp_path / "take.wav")
    player = AudioPlayer()
    with qtbot.waitSignal(player.playing_changed, timeout=10_000, check_params_cb=lambda key: key == ""):
        player.play(take)
    qtbot.waitUntil(lambda: player.holds() == "", timeout=5_000)


def test_a_file_started_after_the_end_is_kept(qtbot, tmp_path):
    """The release after the end must not take away a file that started playing in the meantime."""
    first, second = _wav(tmp_path / "a.wav"), _wav(tmp_path / "b.wav", seconds=5.0)
    player = AudioPlayer()
    with qtbot.waitSignal(player.playing_changed, timeout=10_000, check_params_cb=lambda key: key == ""):
        player.play(first)
    player.play(second)
    qtbot.wait(50)
    assert player.holds() == str(second) and player.current == str(second)
    player.stop()


def test_the_clip_folder_goes_quietly_when_a_clip_in_it_cannot_be_deleted(qtbot):
    """On Windows the back-end may still hold the last clip when the editor's player is destroyed."""
    from alltalk_gui.gui.transcript.clip_player import _ClipFolder
    from tests.held_file import holdable

    folder = _ClipFolder()
    clip = _wav(folder.path() / "clip1.wav")
    hold = holdable(clip)
    hold.hold()
    try:
        folder.remove()  # no exception from the slot that runs it
    finally:
        hold.release()
    assert clip.exists()  # it could not go, and nothing said so loudly
    clip.unlink()
    clip.parent.rmdir()
