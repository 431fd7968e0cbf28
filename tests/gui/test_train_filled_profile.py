"""The Train page on a graphics card, with a profile picked by hand: its micro-batch is filled up to the profile's
target (core.training.profiles.fill_micro_batch), the page says so under the profiles, and the Advanced panel
shows the filled values as the profile's own; Auto is not filled (its run probes the card). The card is a
description (DeviceInfo), so this runs without one; the run is not started."""

from __future__ import annotations

from alltalk_gui.core.machine.gpu import DeviceInfo
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.train.train_page import TrainPage
from tests.gui.test_train_page import tiny_base, voice_project  # noqa: F401  (the page's fixtures)

CARD = DeviceInfo(kind="cuda", index=0, name="NVIDIA GeForce RTX 3060", total_gib=12.0, free_gib=11.2, bf16=True,
                  capability="8.6")


def test_low_on_a_card_runs_8_clips_a_micro_batch_and_says_why(qtbot, monkeypatch, tmp_path, tiny_base,
                                                                voice_project):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    from alltalk_gui.gui.start import system_checks

    system_checks.set_base_model_folder(tiny_base)
    page = TrainPage()
    qtbot.addWidget(page)
    page.setup.set_devices([CARD])
    page.resize(1200, 900)
    page.set_project(VoiceProject.open(voice_project))
    page.show()
    setup = page.setup

    setup.picker.choose("low")
    qtbot.waitUntil(lambda: "per micro-batch" in setup.profile_notes.text(), timeout=10_000)
    config = setup.build_config()
    assert (config.batch_size, config.grad_accum_steps) == (8, 1)
    note = setup.profile_notes.text()
    assert "Low VRAM runs 8 clip(s) per micro-batch x 1 on this card (written 1 x 8" in note
    advanced = setup.advanced
    assert advanced.notes["batch_size"].text() == "(profile)" and advanced.notes["grad_accum_steps"].text() == "(profile)"
    if shot := __import__("os").environ.get("ALLTALK_SHOT"):  # a picture to look at, when asked for
        qtbot.wait(200)  # the layout settles in the event loop
        page.grab().save(shot)

    # The fixture's clips are 2-4 s: the estimates are for them, not for the 11.6 s XTTS allows.
    setup.picker.choose("high")
    qtbot.waitUntil(lambda: "High runs" in setup.profile_notes.text(), timeout=10_000)
    longest = setup.facts["longest_s"]
    assert 1.5 < longest < 5 and f"on clips up to {longest:.3g} s" in setup.profile_notes.text()
    assert setup.picker.source.longest_clip_s == longest

    setup.picker.choose("auto")
    qtbot.waitUntil(lambda: "per micro-batch" not in setup.profile_notes.text(), timeout=10_000)
    auto = setup.build_config()
    assert auto.auto_micro_batch and "per micro-batch x" not in setup.profile_notes.text()
