"""An engine declares its own settings once (EngineOptions + setting()); loading, validation, the CLI's text and
the GUI's editors all come from that declaration."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from alltalk_gui.core.engine_api.options import EngineOptions, OptionError, declared, setting


@dataclass
class Knobs(EngineOptions):
    rate: float = setting(0.5, "Rate", "How fast.", minimum=0.0, maximum=1.0, step=0.1, decimals=1)
    voices: int = setting(2, "Voices", "How many.", minimum=1, choices=(1, 2, 4), in_view=True)
    style: str = setting("calm", "Style", "Which.", choices=("calm", "bright"))
    loud: bool = setting(False, "Loud", "Whether.")

    def validate(self) -> None:
        super().validate()
        if self.loud and self.style == "calm":
            raise OptionError("loud needs style=bright.")


def test_the_declaration_gives_types_defaults_labels_and_ranges():
    shown = {d.name: d for d in declared(Knobs)}
    assert list(shown) == ["rate", "voices", "style", "loud"]
    assert (shown["rate"].kind, shown["rate"].default, shown["rate"].setting.label) == (float, 0.5, "Rate")
    assert shown["voices"].setting.choices == (1, 2, 4) and shown["voices"].setting.in_view
    assert shown["loud"].kind is bool and Knobs.names() == ("rate", "voices", "style", "loud")


def test_saved_values_load_strictly():
    assert Knobs.from_dict({"rate": 1, "style": "bright"}) == Knobs(rate=1.0, style="bright")
    assert isinstance(Knobs.from_dict({"rate": 1}).rate, float)
    with pytest.raises(OptionError, match="Unknown option.*: speed"):
        Knobs.from_dict({"speed": 2})
    with pytest.raises(OptionError, match="voices must be int, found str"):
        Knobs.from_dict({"voices": "2"})
    with pytest.raises(OptionError, match="must be a JSON object"):
        Knobs.from_dict(["rate"])


def test_validation_names_the_option_and_its_range():
    Knobs().validate()
    Knobs(voices=3).validate()  # a number may take any value in its range; the choices are the usual ones
    with pytest.raises(OptionError, match=r"rate must be between 0 and 1 \(it is 1.5\)"):
        Knobs(rate=1.5).validate()
    with pytest.raises(OptionError, match=r"voices must be at least 1 \(it is 0\)"):
        Knobs(voices=0).validate()
    with pytest.raises(OptionError, match="style must be one of calm, bright"):
        Knobs(style="loud").validate()
    with pytest.raises(OptionError, match="loud needs style=bright"):  # the engine's own check between fields
        Knobs(loud=True).validate()


def test_text_from_the_command_line_becomes_the_options_type():
    assert Knobs.parse("rate", "0.25") == 0.25 and Knobs.parse("voices", "4") == 4
    assert Knobs.parse("loud", "yes") is True and Knobs.parse("loud", "off") is False
    with pytest.raises(OptionError, match="voices expects a whole number, got 'many'"):
        Knobs.parse("voices", "many")
    with pytest.raises(OptionError, match="Unknown option 'speed'"):
        Knobs.parse("speed", "1")


def test_an_engine_without_options_has_an_empty_declaration():
    assert declared(EngineOptions) == [] and EngineOptions.from_dict({}) == EngineOptions()
    assert EngineOptions().extra_weight_copies() == 0 and EngineOptions.for_base_model(None) == EngineOptions()
