"""The Preview page's inputs keep their widths whatever the engine speaks from: the checkpoint and the sentence take
the page's width, the buttons and the language box beside them stay small. With a speaker name (Orpheus-TTS) or a
description (Parler-TTS) the last column took most of the width: a checkpoint name cut off after "eval", a
"Use latest" button a third of the page wide, a language box wider than the sentence
(docs/images/preview_orpheus.png, preview_parler.png, first renderings)."""

from __future__ import annotations

import pytest

from alltalk_gui.core.engine_api.engine import ReferenceKind
from alltalk_gui.gui.preview.preview_inputs import PreviewInputs


@pytest.mark.parametrize("kind", list(ReferenceKind))
def test_the_checkpoint_and_sentence_take_the_width(qtbot, kind):
    inputs = PreviewInputs()
    qtbot.addWidget(inputs)
    inputs.resize(1060, 200)
    inputs.show()
    inputs.picker.set_kind(kind, "Grandma")
    qtbot.wait(50)
    checkpoint, sentence = inputs.checkpoint_box.width(), inputs.text_box.width()
    assert checkpoint == sentence and checkpoint > 0.7 * inputs.width()
    assert inputs.switch_button.width() < 150 and inputs.language_box.width() < 150
