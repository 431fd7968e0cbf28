"""Orpheus-TTS 3B 0.1 (canopyai/Orpheus-TTS) as an engine: a Llama 3.2 3B that speaks in SNAC 24 kHz codes.

Orpheus is fine-tuned as a language model: each clip becomes one token sequence, the prompt "<speaker>: <text>"
between Orpheus's special tokens and then the clip's audio codes, and the model learns to say the codes. The
voice is then asked for by its speaker name; there is no reference clip at synthesis. Its users fine-tune on 80 GB
cards; here the Low profile holds the base in 4 bits (bitsandbytes NF4) and trains LoRA adapters, with the loss
computed a chunk of the 156,940-token vocabulary at a time, so a 6 GB card trains it.

Dependency decision: ``snac`` (PyPI, MIT, the codec's reference implementation; its own dependencies are torch,
numpy, einops and huggingface-hub). Orpheus's own package (``orpheus-speech``) is not used: it needs vLLM for
inference, and its training scripts are Hugging Face ``Trainer`` scripts; the model is a plain transformers
``LlamaForCausalLM``, which is what this engine loads, trains, generates with and exports.

=====================================  ===================================================================
base-model files, check, download      :mod:`.files` (``validate_base_model``), :mod:`.download`
the codec                              :mod:`.codec` (load, facts, encode, decode)
tokens                                 :mod:`.tokens` (special ids by name, frames as tokens, the prompt)
dataset                                :mod:`.data` (clips checked against the context, sequences, batches),
                                       :mod:`.codes` (SNAC codes once per clip, through the feature cache)
model + loss, memory levers            :mod:`.model` (4-bit / bf16 / fp32 base, LoRA, checkpointing, the
                                       chunked cross-entropy), :mod:`.fsdp` (several GPUs)
memory estimate                        :mod:`.memory_estimate`, profiles in ``resources/profiles/orpheus/``
a checkpoint's model                   :mod:`.tuned` (LoRA merged, FSDP shards gathered)
synthesis for preview                  :mod:`.synthesis` (KV-cache sampling, frame grammar, SNAC decoding)
export formats                         :mod:`.export` (Hugging Face folder, or the LoRA adapter)
its options                            :mod:`.options`; the engine object in :mod:`.engine`
tiny test model                        :mod:`.tiny_model`
=====================================  ===================================================================
"""
