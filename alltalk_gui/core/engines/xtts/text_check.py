"""Can XTTS v2 encode this transcript? Finds the characters its tokenizer would turn into [UNK].

XTTS trains on text that goes through coqui's ``VoiceBpeTokenizer``: language-specific cleaning (lower case,
numbers and abbreviations spelled out, Chinese to pinyin...) and then a BPE vocabulary (the base model's
``vocab.json``). A character outside that vocabulary becomes ``[UNK]`` and the model learns noise for it.

With the base model's ``vocab.json`` the check is exact. A project that has no base model yet is checked
with coqui's own cleaning and the language's character set instead, and the reason says so.

coqui's tokenizer module imports torch, so it is imported on first use only; call :meth:`TextChecker.warm_up`
from a worker thread to pay that cost (about 2 s) before the first edit.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path
from typing import Any

from alltalk_gui.core.engine_api import languages
from alltalk_gui.core.engines.xtts.layout import BASE_MODEL_SETTING, model_files

# The languages XTTS v2 was trained on, as coqui's text cleaning names them (zh, not zh-cn).
XTTS_LANGUAGES = frozenset(lang.tokenizer_code for lang in languages.LANGUAGES)

# The script the cleaned text of each language is written in; zh, ja and ko are romanised by the cleaning.
_SCRIPT = {"ru": "CYRILLIC", "ar": "ARABIC", "hi": "DEVANAGARI"}


def base_model_vocab() -> Path | None:
    """The ``vocab.json`` of the base model chosen in the app settings, or None if none is chosen or it is gone.

    An unreadable settings file counts as no choice: the check then falls back to the character set.
    """
    from alltalk_gui.core import app_settings

    try:
        folder = app_settings.get(BASE_MODEL_SETTING)
    except app_settings.SettingsError:
        return None
    if not folder:
        return None
    vocab = model_files(Path(str(folder)).expanduser()).path("vocab.json")  # a Trainer folder's, else its base's
    return vocab if vocab.is_file() else None


class TextChecker:
    """Answers "which characters of this text can XTTS not encode?" for one language.

    Args:
        language: project language code; a region suffix is ignored (``zh-cn`` -> ``zh``).
        vocab_file: the base model's ``vocab.json``; None checks against the language's character set.

    Raises:
        FileNotFoundError: ``vocab_file`` is given but does not exist.
    """

    def __init__(self, language: str, vocab_file: str | os.PathLike[str] | None = None) -> None:
        self.language = language.lower().split("-")[0]
        self.vocab_file = Path(vocab_file) if vocab_file is not None else None
        if self.vocab_file is not None and not self.vocab_file.is_file():
            raise FileNotFoundError(f"XTTS vocabulary {self.vocab_file} does not exist.")
        self._coqui: Any = None
        self._tokenizer: Any = None
        self._cache: dict[str, str | None] = {}

    @property
    def max_chars(self) -> int | None:
        """XTTS's character limit in this language (what clip cutting keeps to)."""
        return languages.char_limit(self.language)

    def warm_up(self) -> None:
        """Import coqui's tokenizer (and load the vocabulary) now rather than on the first check."""
        self._preprocessor()
        if self.vocab_file is not None:
            self._vocab()

    def cleaned(self, text: str) -> str:
        """The text as XTTS sees it after coqui's cleaning (what the tokenizer encodes)."""
        return self._preprocessor().preprocess_text(text, self.language)

    def problem(self, text: str) -> str | None:
        """None if XTTS can encode ``text``, else a sentence naming the characters it cannot."""
        if text not in self._cache:
            self._cache[text] = self._check(text)
        return self._cache[text]

    # -- internals ------------------------------------------------------------------------------------------
    def _check(self, text: str) -> str | None:
        if self.language not in XTTS_LANGUAGES:
            return (f"XTTS v2 does not speak language '{self.language}'; it supports "
                    f"{', '.join(languages.CODES)}.")
        limit = languages.char_limit(self.language)
        if len(text) > limit:
            return (f"The text is {len(text)} characters long; XTTS reads at most {limit} in "
                    f"{languages.language(self.language).name}. Split the clip.")
        try:
            cleaned = self.cleaned(text)
        except ImportError as exc:
            return languages.missing_sentence(self.language) or f"Cannot prepare {self.language} text for XTTS: {exc}."
        except Exception as exc:  # coqui's cleaning (num2words, cutlet, pypinyin...) fails on this text
            return (f"XTTS's {self.language} text preparation fails on this text ({type(exc).__name__}: "
                    f"{str(exc)[:120]}); rewrite the numbers or symbols in words.")
        if self.vocab_file is not None:
            bad = self._not_in_vocab(cleaned)
            where = f"the base model's vocabulary ({self.vocab_file.name})"
        else:
            bad = self._not_in_script(cleaned)
            where = (f"the {self.language} character set (checked without a base model's vocab.json, which gives "
                     "the exact answer)")
        if not bad:
            return None
        shown = ", ".join(f"'{ch}'" for ch in bad)
        return f"XTTS cannot encode {shown}: not in {where}. Spell it out or remove it."

    def _not_in_vocab(self, cleaned: str) -> list[str]:
        vocab = self._vocab()
        return sorted({ch for ch in cleaned if ch != " " and ch not in vocab})

    def _not_in_script(self, cleaned: str) -> list[str]:
        script = _SCRIPT.get(self.language, "LATIN")
        bad = set()
        for ch in cleaned:
            if ch == " " or ch.isdigit() or unicodedata.category(ch).startswith("P"):
                continue
            if not unicodedata.name(ch, "").startswith(script):
                bad.add(ch)
        return sorted(bad)

    def _preprocessor(self) -> Any:
        if self._coqui is None:
            from TTS.tts.layers.xtts.tokenizer import VoiceBpeTokenizer

            self._coqui = VoiceBpeTokenizer(None)  # cleaning only; no vocabulary needed
        return self._coqui

    def _vocab(self) -> set[str]:
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            self._tokenizer = set(Tokenizer.from_file(str(self.vocab_file)).get_vocab())
        return self._tokenizer
