"""Parler-TTS v1 (huggingface/parler-tts) as an engine: a voice described in words, fine-tuned on 44.1 kHz DAC codes.

How Parler's classes run: in an environment of the engine's own (:mod:`.environment`), layered over the app's,
because Parler-TTS 0.2.3 needs transformers 4.46.1 and the app needs transformers 5; the measurements that decided
it are in :mod:`.environment` and ``docs/architecture.md``. Modules that run in the app itself import no Parler
code; the others run in the training child or in an :class:`~alltalk_gui.core.engine_api.engine_child.EngineChild`.

=====================================  ===================================================================
in the app                             :mod:`.engine` (``ENGINE``), :mod:`.files` (folder checks), :mod:`.download`,
                                       :mod:`.description` (the speaker's description), :mod:`.export` (folder,
                                       README), :mod:`.memory_estimate`, :mod:`.environment`
in the engine's environment            :mod:`.upstream` (Parler's classes), :mod:`.model` (trainable view, loss,
                                       LoRA, checkpointing), :mod:`.data` (delay pattern, batches), :mod:`.codes`
                                       (DAC codes and their cache), :mod:`.training` (what the loop gets),
                                       :mod:`.tuned` (a checkpoint's model), :mod:`.synthesis`, :mod:`.worker`
                                       (preview and export calls), :mod:`.tiny_model`
=====================================  ===================================================================
"""
