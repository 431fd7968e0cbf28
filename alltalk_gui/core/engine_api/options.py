"""An engine's own settings, declared once by the engine and read by everything else by name.

Two kinds exist: **training options** (:attr:`Engine.train_options`; a run's ``TrainConfig.options``, saved in its
``train_config.json`` and every checkpoint) and **generation options** (:attr:`Engine.generation_options`;
``GenerationSettings.options`` of a preview). Each is a dataclass that subclasses :class:`EngineOptions` and
declares every field with :func:`setting`: its default, a label and a sentence for people, and its range or
choices. From that one declaration:

* the engine validates (:meth:`EngineOptions.validate`: ranges and choices, plus any check the engine adds);
* saved files load strictly (:meth:`EngineOptions.from_dict`: an unknown key or a wrong type is an error);
* the CLI's ``--set name=value`` converts text to the field's type (:meth:`EngineOptions.parse`);
* the Train page's Advanced panel and the Preview page's generation panel build their editors
  (:func:`declared`), so a new engine's options appear there with no GUI change.

Neutral code never names an engine's option; an engine never names another's.
"""

from __future__ import annotations

import os
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, TypeVar, get_type_hints

from alltalk_gui.core.dataclass_keys import unknown_keys, wrong_types

_SETTING = "alltalk_gui.setting"  # the key of a field's metadata that holds its Setting

Options = TypeVar("Options", bound="EngineOptions")


class OptionError(ValueError):
    """An engine option is unknown or out of range; the message names it."""


@dataclass(frozen=True)
class Setting:
    """How people see one option: what it is called and does, and which values it takes."""

    label: str
    help: str                        # what it changes and what it costs, in a sentence or two
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None        # a spin box's step (None: 1 for integers, 0.1 for decimals)
    decimals: int | None = None      # a spin box's decimals (None: 2)
    # The values offered in a list: a text option takes only these; a number any in its range (the list holds the
    # usual ones, and a front end may say what each costs).
    choices: tuple[Any, ...] = ()
    # Shown beside the generation panel's switch rather than inside it: it decides how long a take takes.
    in_view: bool = False


def setting(default: Any, label: str, help: str, *, minimum: float | None = None, maximum: float | None = None,
            step: float | None = None, decimals: int | None = None, choices: tuple[Any, ...] = (),
            in_view: bool = False) -> Any:
    """A field of an :class:`EngineOptions` dataclass with its :class:`Setting` (``x: float = setting(...)``)."""
    return field(default=default, metadata={_SETTING: Setting(label, help, minimum, maximum, step, decimals,
                                                              tuple(choices), in_view)})


@dataclass(frozen=True)
class Declared:
    """One option as a front end shows it: name, type, default and :class:`Setting`."""

    name: str
    kind: type                       # bool, int, float or str
    default: Any
    setting: Setting


@dataclass
class EngineOptions:
    """The base of an engine's options dataclass (no fields of its own: an engine without options uses it as is).

    Subclasses declare their fields with :func:`setting` and may extend :meth:`validate` for checks between
    fields (calling ``super().validate()`` first)."""

    @classmethod
    def from_dict(cls: type[Options], data: dict[str, Any]) -> Options:
        """Build from saved values; missing ones default.

        Raises:
            OptionError: a key that is no option, or a value of the wrong type.
        """
        if not isinstance(data, dict):
            raise OptionError(f"Engine options must be a JSON object, found {type(data).__name__}.")
        unknown = unknown_keys(cls, data)
        if unknown:
            raise OptionError(f"Unknown option(s): {', '.join(unknown)}.")
        wrong = wrong_types(cls, data)
        if wrong:
            raise OptionError(f"Option(s) of the wrong type: {'; '.join(wrong)}.")
        return cls(**{k: float(v) if declared_kind(cls, k) is float else v for k, v in data.items()})

    @classmethod
    def for_base_model(cls: type[Options], base_model_dir: str | os.PathLike[str] | None) -> Options:
        """The defaults for a base model (generation options read a model's own sampling defaults here); the
        declared defaults unless the engine says otherwise."""
        return cls()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def extra_weight_copies(self) -> int:
        """Copies of the model's weights these options add to every checkpoint beside the trained ones (an
        average of the weights, say), for the disk estimate before a run; 0 unless the engine says otherwise."""
        return 0

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def parse(cls, name: str, raw: str) -> Any:
        """``raw`` (text, as the CLI's ``--set`` gives it) as option ``name``'s type.

        Raises:
            OptionError: no such option, or text that is not of its type.
        """
        if name not in cls.names():
            raise OptionError(f"Unknown option '{name}'.")
        return parse_value(name, raw, declared_kind(cls, name))

    def validate(self) -> None:
        """Check every value against its declared range or choices.

        Raises:
            OptionError: naming the option and the values it takes.
        """
        for option in declared(type(self)):
            value, s = getattr(self, option.name), option.setting
            if s.choices and option.kind is str and value not in s.choices:
                raise OptionError(f"{option.name} must be one of {', '.join(s.choices)} (it is '{value}').")
            if option.kind in (int, float):
                low = s.minimum if s.minimum is not None else float("-inf")
                high = s.maximum if s.maximum is not None else float("inf")
                if not low <= value <= high:
                    raise OptionError(f"{option.name} must be {_range_words(s)} (it is {value}).")


def declared(cls: type[EngineOptions]) -> list[Declared]:
    """The options of ``cls`` in declaration order, each with its type, default and :class:`Setting` (a field
    declared without :func:`setting` gets its name as its label)."""
    out = []
    for f in fields(cls):
        default = f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
        s = f.metadata.get(_SETTING) or Setting(f.name.replace("_", " ").capitalize(), "")
        out.append(Declared(f.name, declared_kind(cls, f.name), default, s))
    return out


def declared_kind(cls: type, name: str) -> type:
    """The plain type (bool, int, float, str) of field ``name`` of the dataclass ``cls``."""
    kind = get_type_hints(cls)[name]
    return kind if kind in (bool, int, float, str) else str


def parse_value(name: str, raw: str, kind: type) -> Any:
    """Text as ``kind`` (bool takes 1/0, true/false, yes/no, on/off).

    Raises:
        OptionError: naming ``name`` and the type it expects.
    """
    try:
        if kind is bool:
            lowered = raw.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if kind in (int, float):
            return kind(raw)
        return raw
    except ValueError:
        wanted = {bool: "true or false", int: "a whole number", float: "a number"}.get(kind, kind.__name__)
        raise OptionError(f"{name} expects {wanted}, got '{raw}'.") from None


def _range_words(s: Setting) -> str:
    if s.minimum is not None and s.maximum is not None:
        return f"between {s.minimum:g} and {s.maximum:g}"
    if s.minimum is not None:
        return f"at least {s.minimum:g}"
    return f"at most {s.maximum:g}"
