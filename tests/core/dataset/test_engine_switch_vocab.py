"""A switch judges the clips' text with the new engine's base-model vocabulary: what the question says before the
switch (plan_switch) is what the switch then does (switch_engine), so no clip is refused without being named."""

from __future__ import annotations

from alltalk_gui.core.dataset.engine_switch import plan_switch, switch_engine
from alltalk_gui.core.transcript.flags import UNENCODABLE
from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.transcript.test_segments_support import add_source, make_project, make_vocab, segment, voice_like


def test_the_plan_and_the_switch_judge_the_text_with_the_new_engines_vocabulary(tmp_path):
    vocab = make_vocab(tmp_path / "vocab.json")  # English letters only, as a base model's BPE vocabulary can be
    project = make_project(tmp_path)
    project.choose_engine("f5")
    add_source(project, "a.wav", voice_like(10.0))
    clips = SegmentList.create(project, [segment("c00001", "s001", 0, 4000, "A café in town."),
                                         segment("c00002", "s001", 5000, 9000, "The lazy dog.")])
    assert clips["c00001"].flag_codes == ()  # F5-TTS reads the é

    assert plan_switch(project, "xtts", clips).now_refused == {}  # without the vocabulary: letters only
    plan = plan_switch(project, "xtts", clips, vocab)
    assert plan.now_refused == {UNENCODABLE: ("c00001",)}
    assert any("c00001" in line for line in plan.messages())
    assert project.engine == "f5" and clips["c00001"].flag_codes == ()  # a plan changes nothing

    done = switch_engine(project, "xtts", clips, vocab)
    assert done.now_refused == plan.now_refused
    assert project.engine == "xtts" and UNENCODABLE in clips["c00001"].flag_codes
    assert clips["c00002"].flag_codes == ()
    clips.close()
