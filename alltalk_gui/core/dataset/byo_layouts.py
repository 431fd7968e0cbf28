"""The bring-your-own dataset layouts in words: one home for the names the CLI's help, the GUI's import dialog
and the import report show. No imports beyond the standard library: the CLI builds its help from it at start-up.

The layouts are named after the programs users bring them from (AllTalk / coqui XTTS, F5-TTS, LJSpeech), so that
they recognise their data; these are dataset formats, not the engines of this app (the architecture test
tests/architecture/test_engine_names.py allows these strings by name for that reason)."""

from __future__ import annotations

LAYOUT_NAMES = {
    "coqui": "coqui / AllTalk dataset (metadata_train.csv)",
    "f5": "F5-TTS dataset (metadata.csv with an audio_file|text header)",
    "ljspeech": "LJSpeech dataset (metadata.csv + wavs/)",
    "parquet": "Hugging Face dataset (parquet or arrow)",
    "sidecar": "folder of audio files with a text file beside each",
}
"""A layout's key (as :func:`alltalk_gui.core.dataset.byo_import.find_dataset` returns it) -> its name."""

SUPPORTED_LAYOUTS = (
    "AllTalk / coqui XTTS: metadata_train.csv and metadata_eval.csv (AllTalk's finetune/<name>/ folder)",
    "F5-TTS: metadata.csv with the header audio_file|text",
    "LJSpeech: metadata.csv (id|text) with wavs/",
    "Orpheus / Parler (Hugging Face): .parquet files with audio and text columns, or the .arrow files of "
    "load_dataset's cache or save_to_disk",
    "Audio files with a text file beside each: clip.wav + clip.txt, .lab (MFA), .normalized.txt (LibriTTS), "
    "in any sub-folders",
)
"""The layouts in words, one line each."""

IN_SHORT = "AllTalk / coqui, F5-TTS, LJSpeech, Hugging Face parquet, or audio files with a .txt or .lab beside each"
"""The layouts in a few words (the CLI's command list, the GUI's tooltip)."""
