"""The Python environment Parler-TTS runs in: the app's, plus the packages Parler's classes need at the versions
they were written for (see :mod:`alltalk_gui.core.engine_api.environment` for how it is layered and made).

Why it cannot run in the app's own environment (measured 2026-11-26 with the app's transformers 5.23.0, details
in ``docs/architecture.md``): ``import parler_tts`` fails (``transformers.pytorch_utils.isin_mps_friendly`` is
gone); with that patched, building the model fails on config attributes transformers 5 no longer sets and on
``tie_weights``'s new signature; with those patched too, the forward pass fails
(``EncoderDecoderCache.from_legacy_cache`` is gone), ``generate`` fails (models no longer inherit
``GenerationMixin``; its private helpers changed), and ``from_pretrained`` leaves the description encoder's
embedding random without an error. Five patches into another project's code and a silent wrong weight: no.

What the environment holds (``--no-deps``, so this is the complete list and pip never touches the app's
packages): ``parler-tts`` 0.2.3 and the transformers it pins (4.46.1) with the tokenizers and huggingface_hub
that transformers accepts; Descript's DAC (``descript-audio-codec``) and ``descript-audiotools``, which the
``dac`` package imports at its top, with the seven small pure-Python packages their imports reach (measured by
importing: flatten-dict, julius, ffmpy, importlib-resources, randomname, argbind, docstring-parser). The rest of
audiotools' declared chain (pyloudnorm, pystoi, torch-stoi, markdown2, ipython...) is used only by code the app
never calls. torch, accelerate, peft, numpy, scipy, soundfile, tensorboard and rich come from the app's
environment (the import check at creation fails loudly if one is ever missing). 14 MB to download, 119 MB on
disk, 18 s to make (measured here, with pip's cache warm).
"""

from __future__ import annotations

from alltalk_gui.core.engine_api.environment import EngineEnvironment

PARLER_TTS_VERSION = "0.2.3"

ENVIRONMENT = EngineEnvironment(
    name=f"parler-tts-{PARLER_TTS_VERSION}-1",
    requirements=(
        f"parler-tts=={PARLER_TTS_VERSION}",
        "transformers==4.46.1",
        "tokenizers==0.20.3",
        "huggingface-hub==0.36.2",
        "descript-audio-codec==1.0.0",
        "descript-audiotools==0.7.2",
        "flatten-dict==0.5.0",
        "julius==0.2.8",
        "ffmpy==1.0.0",
        "importlib-resources==7.1.0",
        "randomname==0.2.1",
        "argbind==0.3.9",
        "docstring-parser==0.18.0",
    ),
    imports=("parler_tts", "dac", "peft", "accelerate", "alltalk_gui"),
    why="Parler-TTS's model code needs transformers 4.46.1, and the rest of the app needs transformers 5.",
    download_size="about 14 MB to download and 120 MB on disk",
)
