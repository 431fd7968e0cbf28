"""F5-TTS v1 (SWivid/F5-TTS) as the app's second engine: base files and checks, download, dataset, model and
loss, LoRA, memory estimate, synthesis for preview, export, tiny test model. Not wired into the app yet: the
engine interface (``alltalk_gui.core.engines``) is being built beside it; every module here is usable alone.

Dependency decision: f5-tts is installed with ``pip install --no-deps f5-tts==1.1.22`` and the app declares only
what F5's model, mel and vocoder code imports: ``x-transformers`` (rotary embedding), ``torchdiffeq`` (the ODE
sampler), ``vocos`` (vocoder; brings ``encodec``), ``rjieba`` + ``pypinyin`` (Chinese to pinyin in its
tokenizer), ``librosa`` (imported by its mel module). f5-tts's declared dependencies would add gradio, wandb,
hydra, datasets, ema_pytorch, transformers_stream_generator, cached_path and more (gradio alone is well over
100 MB with its own web stack), none of which training, preview or export here uses. Its ``f5_tts.model``
package ``__init__`` imports its Trainer and with it wandb/datasets/ema_pytorch, so :mod:`.upstream` imports
``f5_tts.model.cfm`` and ``f5_tts.model.backbones.dit`` without running that ``__init__``; the classes
themselves are upstream's, unchanged, so weights load and behave exactly as in f5-tts.

Import cost (measured 2026-11-23 on the shared 2-core dev machine, after torch): 7.0-8.6 s, of which
x-transformers (via einx) is about 3.7 s and librosa.filters about 2.2 s; torch itself 2.7-3.7 s. Import the
modules here only in the training child process or a worker thread, never at GUI start.

What the engine interface needs, and where it is here:

=====================================  ===================================================================
base-model files, check, download      :mod:`.files` (``validate_base_model``), :mod:`.download`
tiny test model                        :mod:`.tiny_model` (``build_tiny_f5``; CLI ``make-test-model --engine f5-tts``)
dataset: rate, clip lengths, text      :mod:`.data` (24 kHz, 1-30 s, ``prepare_clips``, ``collate``),
                                       :mod:`.text` (``tokenize``, ``missing_tokens``, ``extend_vocabulary``)
model + loss, memory levers            :mod:`.model` (``load_f5``, ``loss``, ``add_lora``/``merge_lora``,
                                       ``set_checkpointing``, ``EmaOptions``/``make_ema``, ``export_state``)
memory estimate                        :mod:`.memory_estimate` (``estimate(F5Setting)``), profiles in
                                       ``resources/profiles/f5/``
synthesis for preview                  :mod:`.synthesis` (``synthesize_to_file``, ``choose_reference``, NFE)
export formats                         :mod:`.export` (``export_f5``: AllTalk ``models/f5tts/<name>`` or plain)
=====================================  ===================================================================
"""
