"""AllTalk GUI: turn a few minutes of recorded voice into a fine-tuned voice model (XTTS v2, F5-TTS, Orpheus-TTS or
Parler-TTS)."""

import logging

__version__ = "0.1.0"

# bitsandbytes, imported by peft and transformers in every process that trains, previews or exports, warns on CPUs
# with AVX-512 bf16 that it could not download an optional 4-bit kernel from the Hugging Face Hub ("pip install
# kernels"). It falls back to its own kernel, and the app never downloads code, so the line says nothing a user can
# act on; set here, in every process of the app (the CLI, training children, engine environments' workers).
logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)
