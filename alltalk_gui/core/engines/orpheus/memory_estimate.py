"""Estimate the peak GPU memory of an Orpheus 3B fine-tune before it starts.

The same sum as for the other engines, for Orpheus's Llama (3.3 B parameters: 28 decoder layers of 100.7 M in
their linear layers, a tied 156,940 x 3,072 embedding of 482 M), or for the same model untied (:attr:`Shape.tied`:
a separate output projection, another 482 M values in every part below, as a LoRA adapter that carries
``embed_tokens``/``lm_head`` in full leaves the base it is merged into: :func:`.files.loaded_shape`):

* **weights**: the decoder layers' linear weights at the base's storage - NF4 (4 bits plus double-quantised
  scales: 0.516 bytes a weight), bf16 (2) or fp32 (4) - and the rest (embedding, norms) at bf16 or fp32 (NF4
  quantises only linear layers); LoRA adapters in fp32. An untied model's input embedding is not on the card in
  a LoRA run: frozen, it stays in host memory and only its looked-up rows go to the card (:func:`on_host`), so
  Low and Medium hold the same weights there tied or untied;
* **gradients**: one per trainable value, in its own type (fp32 adapters; bf16 for High's bf16 weights);
* **optimizer**: AdamW's two moments in each trainable value's own type (8 bytes for fp32 adapters, 4 for bf16
  weights); bitsandbytes' 8-bit AdamW 2, plus an fp32 scale per 256 values for each moment (block-wise);
* **activations**: what autograd saves for backward per token, from :func:`calibrate`, which counts the bytes
  of every tensor saved in a forward pass of a real-width decoder layer (random weights) at three lengths, with
  and without checkpointing, LoRA or not, in fp32 and under bf16 autocast (``resources/profiles/orpheus/
  activation_calibration.json``), with the base's weights in their type (a bf16 or NF4 base passes bf16 hidden
  states between its layers, an fp32 one fp32: until 2026-11-27 every base was counted as fp32, twice what the
  layers' inputs of Medium's bf16 base hold, 18 % over Medium's peak on the H200 in a run of one clip a micro-batch):
  with checkpointing every layer's input all along, plus the larger of one
  layer's recomputed activations and the chunked cross-entropy's one chunk of logits (256 tokens x 156,940 in
  fp32 and their log-softmax, 0.30 GiB, with the engine's loss; in fp32 with their gradient and the bf16
  product, 0.37 GiB, with the loss before it; the whole logits for Orpheus's own settings) - the
  loss's backward comes first and the layers' recomputation after, so the two never coexist; with fp32 weights
  under 16-bit autocast (Orpheus's own settings), the bf16 copies autocast makes of them and saves for backward:
  every layer's without checkpointing, 5.3 GiB for the 28 layers, and the output projection's 0.9 GiB
  (:func:`autocast_copies`);
* **gradient buffers**: when the vocabulary matrix trains (a full fine-tune; ``embeddings_in_full``), the
  gradients it gets from the loss and, tied, from the embedding lookup are summed in a buffer beside its
  ``.grad``: with the engine's loss and lookup (``linear_cross_entropy``, ``tied_gradient``) none in a process
  of its own, one 0.90 GiB bf16 matrix under torch.distributed (``tied_gradient="handed"``); with torch's lookup
  two at once (``"separate"``); with the loss before both (each chunk checkpointed apart, ``fused_loss=False``),
  which the H200 run below measured, three
  (:func:`embedding_gradient_buffers`, counted on the CPU by ``benchmarks/orpheus_embedding_gradient_transient.py``);
* **overhead**: what the CUDA allocator reserves beyond what it hands out (expandable segments), with cuBLAS's
  workspaces: 0.25 GiB plus 3 % of the rest.

Fitted to the first GPU measurements (``benchmarks/results/orpheus_memory_profiles_10s_2026-11-27_gpu.json``: one
NVIDIA H200, torch 2.11+cu130, bitsandbytes 0.50.2, real-size Orpheus 3B with random weights, 10 s clips of 860
tokens, micro-batch 1 x 8, expandable segments; the old checkpointed-chunk loss, so estimated here with
``fused_loss=False``). The sum of the first five parts against the peak *allocated*
memory: Low 3.25 / 3.28 GiB, Medium 7.16 / 7.18, High 21.51 / 21.46 (High's 2.3 GiB above its weights,
gradients, moments and activations is the gradient buffers). Reserved was 0.19-0.20 GiB above allocated for the
LoRA profiles and 0.93 GiB for High (holes the 0.9 GiB buffers leave as they come and go): the overhead gives
0.35, 0.47 and 0.90. Totals against peak reserved: Low 3.59 / 3.49 GiB (+3.0 %), Medium 7.63 / 7.37 (+3.5 %),
High 22.41 / 22.39 (+0.1 %). (The 10 % plus 0.35 GiB first borrowed from the other engines over-estimated the
LoRA profiles by 13-16 %, and without the buffers High came out 4 % short.) With the layers' inputs counted in the
base's bf16 (below) those are 3.45, 7.48 and 22.26 GiB (-1.0, +1.6, -0.6 %). The kit's second H200 run
(``benchmarks/results/gpu_kit_2026-11-27_h200_run2/``, the engine's loss) and its third: every case trained one
clip a micro-step, whatever micro-batch its record names (the benchmark collated one clip until then): High 19.31
GiB at 10 s (estimate of one clip 19.80) and 19.72 at 30 s (20.08); Medium 7.25 and 7.20 at 10 s (7.41), 7.58 at
30 s (7.71); Low 3.66 at 30 s (3.68). Orpheus's own LoRA settings reserved 40.69 GiB (41.36 with the autocast
copies, 34.94 without) and its full fine-tune 57.96 (65.62, over: its peak came when its activations were gone;
see tests/benchmarks/test_orpheus_estimates_match_the_h200.py). More than one clip a micro-batch is not measured
on a card yet.

The sequence a clip makes is its prompt (about 40 tokens for a sentence) plus 82 tokens a second of speech, so
a 30 s clip is about 2,500 tokens.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from alltalk_gui.core.machine import activation_fit

GIB = 1024**3
FRAGMENTATION = 0.03
CONSTANT_OVERHEAD_GIB = 0.25
CALIBRATION_PARTS = ("profiles", "orpheus", "activation_calibration.json")  # under resources/
PROMPT_TOKENS = 40               # a sentence's prompt: speaker, words, 6 special tokens
TOKENS_PER_SECOND = 24000 / 2048 * 7
CE_CHUNK = 256
NF4_BYTES = 0.5 + 0.5 / 64 + 4 / (64 * 256)  # 4-bit weights; a 1-byte scale per 64 weights, and an fp32 scale of
                                              # those per 256 blocks (double quantisation)

# canopylabs/orpheus-3b-0.1-ft's config.json (Llama 3.2 3B with Orpheus's vocabulary).
ORPHEUS_3B_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128009, "head_dim": 128, "hidden_act": "silu", "hidden_size": 3072,
    "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": False,
    "num_attention_heads": 24, "num_hidden_layers": 28, "num_key_value_heads": 8, "pretraining_tp": 1,
    "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                            "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": True, "use_cache": True, "vocab_size": 156940,
}


@dataclass(frozen=True)
class Shape:
    """The sizes that set the memory."""

    hidden: int = 3072
    intermediate: int = 8192
    layers: int = 28
    heads: int = 24
    kv_heads: int = 8
    vocab: int = 156940
    # One vocabulary matrix for the embedding and the output projection (Orpheus 3B as published), or two (an
    # untied config, or a merged adapter that carried either in full: the merge keeps its own copy of each).
    tied: bool = True

    @property
    def kv(self) -> int:
        return self.hidden // self.heads * self.kv_heads

    @property
    def layer_linear(self) -> int:
        """Weights of one decoder layer's seven projections."""
        return self.hidden * (2 * self.hidden + 2 * self.kv) + 3 * self.hidden * self.intermediate

    @property
    def embedding(self) -> int:
        return self.vocab * self.hidden

    @property
    def vocabulary_matrices(self) -> int:
        return 1 if self.tied else 2

    @property
    def parameters(self) -> int:
        norms = self.layers * 2 * self.hidden + self.hidden
        return self.layers * self.layer_linear + self.vocabulary_matrices * self.embedding + norms

    def untied(self) -> "Shape":
        return replace(self, tied=False)

    def lora(self, rank: int) -> int:
        """Adapter values of LoRA on the seven projections of every layer."""
        h, k, m = self.hidden, self.kv, self.intermediate
        return self.layers * rank * (2 * (h + h) + 2 * (h + k) + 3 * (h + m))

    @classmethod
    def of(cls, config: dict[str, Any]) -> "Shape":
        """The shape of a ``config.json`` (tied only where it says so: transformers' Llama default is untied)."""
        return cls(config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"],
                   config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"]),
                   config["vocab_size"], bool(config.get("tie_word_embeddings", False)))


ORPHEUS_3B = Shape.of(ORPHEUS_3B_CONFIG)


def orpheus_3b_of_size(parameters: int | None, tied: bool = True) -> Shape | None:
    """Orpheus 3B tied or untied, whichever has ``parameters`` (within 1 %: a model built and counted, which says
    what was loaded better than the files do: a merge whose two matrices are still equal is tied again); ``tied``
    decides without a count (None). None: another size (the tests' tiny model), which the estimate does not
    describe."""
    shapes = (ORPHEUS_3B, ORPHEUS_3B.untied())
    if parameters is None:
        return shapes[0] if tied else shapes[1]
    return next((s for s in shapes if abs(parameters - s.parameters) <= 0.01 * s.parameters), None)


@dataclass(frozen=True)
class OrpheusSetting:
    """What sets an Orpheus fine-tune's memory (the fields the profiles fill)."""

    batch_size: int = 1
    max_clip_seconds: float = 30.0
    base_weights: str = "nf4"          # "nf4", "bf16" or "fp32"
    mixed_precision: str = "bf16"
    gradient_checkpointing: bool = True
    optimizer: str = "adamw"           # "adamw" or "adamw8bit"
    lora_rank: int = 16                # 0: full fine-tune
    # Orpheus's own LoRA script: the embedding and output projection trained in full beside the adapters (peft's
    # modules_to_save: a trainable copy of each, untied).
    embeddings_in_full: bool = False
    chunked_loss: bool = True          # False: logits of every scored token at once (transformers' own loss)
    # The chunked loss as the engine computes it (model.linear_cross_entropy: the chunks' weight gradient summed in
    # one buffer, in place); False: the loss before it, each chunk checkpointed apart and its full-size weight
    # gradient summed by autograd out of place (what the H200 run of 2026-11-27 measured).
    fused_loss: bool = True
    # Where the tied matrix's gradient goes with the fused loss (engines/orpheus/tied_gradient.py): "direct", the
    # loss's chunks and the lookup's rows straight into .grad (a process of its own: the app on one card);
    # "handed", the loss's gradient handed to the lookup, which adds its rows and returns it to autograd (under
    # torch.distributed); "separate", torch's lookup with a dense gradient of its own, which autograd adds to the
    # loss's (until tied_gradient, 2026-11-27).
    tied_gradient: str = "direct"


@dataclass(frozen=True)
class OrpheusMemoryEstimate:
    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    gradient_buffers_gib: float  # the vocabulary matrices' gradients being summed (see embedding_gradient_buffers)
    overhead_gib: float
    calibrated: bool

    @property
    def total_gib(self) -> float:
        return (self.weights_gib + self.gradients_gib + self.optimizer_gib + self.activations_gib
                + self.gradient_buffers_gib + self.overhead_gib)

    def as_dict(self) -> dict[str, Any]:
        return dict(asdict(self), total_gib=self.total_gib)


# Bytes per token, a shape-derived fallback (bf16): a layer saves about 20 tensors of the hidden width and 3 of the
# MLP's; a checkpointed layer keeps its input.
_FALLBACK = {
    "bf16": {"layer": [0.0, 2.0 * (20 * 3072 + 3 * 8192), 0.0], "layer_input": [0.0, 2.0 * 3072, 0.0]},
    "fp32": {"layer": [0.0, 4.0 * (20 * 3072 + 3 * 8192), 0.0], "layer_input": [0.0, 4.0 * 3072, 0.0]},
}


def load_calibration(path: Path | None = None) -> tuple[dict[str, Any], bool]:
    """The activation coefficients (measured when the calibration file exists)."""
    measured = activation_fit.read(path, CALIBRATION_PARTS, "per_token")
    return (measured, True) if measured is not None else ({"full": _FALLBACK, "lora": _FALLBACK}, False)


def tokens(seconds: float) -> int:
    """The sequence of a clip of ``seconds`` (prompt and speech)."""
    return PROMPT_TOKENS + int(seconds * TOKENS_PER_SECOND) + 2


def setting_for(config, **changes: Any) -> OrpheusSetting:
    """The setting of a ``TrainConfig`` (what the engine's ``estimate_memory`` asks about), with ``changes``."""
    return OrpheusSetting(
        batch_size=config.batch_size, max_clip_seconds=config.max_audio_seconds,
        base_weights=config.engine_options().base_weights, mixed_precision=config.mixed_precision,
        gradient_checkpointing=config.gradient_checkpointing,
        optimizer="adamw8bit" if "8bit" in config.optimizer else "adamw", lora_rank=config.lora_rank, **changes)


def on_host(setting: OrpheusSetting, shape: Shape) -> int:
    """Values of the model a run keeps in host memory, not on the card: an untied model's input embedding in a
    LoRA run, which it only reads rows of (``model.keep_embedding_on_host``; those rows are the first layer's
    input, which the activations count either way). Tied, the output projection needs the matrix on the card;
    trained (a full fine-tune, ``embeddings_in_full``), its gradient and moments do."""
    return shape.embedding if setting.lora_rank and not setting.embeddings_in_full and not shape.tied else 0


def estimate(setting: OrpheusSetting, shape: Shape = ORPHEUS_3B,
             calibration: tuple[dict[str, Any], bool] | None = None) -> OrpheusMemoryEstimate:
    """Peak GPU memory of a fine-tune with ``setting`` on a model of ``shape`` (GiB, parts and total)."""
    per_token, calibrated = calibration or load_calibration()
    linear = shape.layers * shape.layer_linear
    rest = shape.parameters - linear - on_host(setting, shape)
    storage = {"nf4": NF4_BYTES, "bf16": 2.0, "fp32": 4.0}[setting.base_weights]
    dense = 4.0 if setting.base_weights == "fp32" else 2.0  # what NF4 leaves unquantised: embedding, norms
    weights = linear * storage + rest * dense
    if setting.lora_rank:
        trainable, grad_bytes = shape.lora(setting.lora_rank), 4.0
        weights += trainable * 4.0
        gradients, moments = trainable * grad_bytes, trainable * 2 * grad_bytes
        if setting.embeddings_in_full:  # trainable copies of both matrices, in the base's (unquantised) type
            copies = 2 * shape.embedding
            weights += copies * dense
            trainable += copies
            gradients += copies * dense
            moments += copies * 2 * dense
    else:
        trainable, grad_bytes = shape.parameters, storage
        gradients, moments = trainable * grad_bytes, trainable * 2 * grad_bytes
    # 8-bit AdamW (bitsandbytes, block-wise): two 1-byte moments and an fp32 scale of each per 256 values.
    optimizer = trainable * (2.0 + 2 * 4 / 256) if setting.optimizer == "adamw8bit" else moments
    n = tokens(setting.max_clip_seconds)
    half = setting.mixed_precision in ("bf16", "fp16")
    coeffs = per_token["lora" if setting.lora_rank else "full"]
    # 16-bit bases (NF4's embedding and norms, bf16) pass bf16 hidden states between the layers; fp32 ones fp32.
    coeff = coeffs["fp32"] if not half else coeffs.get("bf16_base", coeffs["bf16"]) if setting.base_weights != "fp32" \
        else coeffs["bf16"]
    layer = setting.batch_size * activation_fit.at(coeff["layer"], n)
    # fp32 weights under 16-bit autocast: each projection's weight cast to bf16 for its product, saved for its
    # backward (new memory, unlike a 16-bit base's own weights, which is what at() leaves out with the constant).
    copies, output_copy = autocast_copies(setting, shape)
    if setting.gradient_checkpointing:  # the layers' inputs all along; one layer's activations while it recomputes
        held = setting.batch_size * shape.layers * activation_fit.at(coeff["layer_input"], n)
        layer += copies
    else:  # every layer's activations and weight copies, until the backward pass reaches it
        held, layer = shape.layers * (layer + copies), 0.0
    logits_tokens = min(CE_CHUNK, n * setting.batch_size) if setting.chunked_loss else n * setting.batch_size
    if setting.chunked_loss and setting.fused_loss:
        # linear_cross_entropy, one chunk at a time: in the forward pass its fp32 logits and their fp32 log-softmax
        # (the 16-bit product is freed once made fp32); in the backward pass the fp32 logits, made their gradient in
        # place, and its 16-bit cast.
        per_logit = 4 + 4
    else:  # autograd's: fp32 logits, their gradient, the 16-bit product
        per_logit = 4 + 4 + (2 if half else 0)
    logits = logits_tokens * shape.vocab * per_logit + output_copy
    # The loss's logits come first in the backward pass and the layers' recomputation after: they never coexist.
    activations = held + max(layer, logits)
    buffers = embedding_gradient_buffers(setting, shape, n, layer, logits)
    subtotal = (weights + gradients + optimizer + activations + buffers) / GIB
    return OrpheusMemoryEstimate(weights / GIB, gradients / GIB, optimizer / GIB, activations / GIB, buffers / GIB,
                                 FRAGMENTATION * subtotal + CONSTANT_OVERHEAD_GIB, calibrated)


def autocast_copies(setting: OrpheusSetting, shape: Shape) -> tuple[float, float]:
    """Bytes of autocast's 16-bit copies of fp32 weights that autograd keeps for backward: one decoder layer's seven
    projections (and their adapters), and the output projection's matrix (held with the loss's logits).

    Under bf16 autocast a product casts an fp32 weight to bf16 and saves the cast for its backward (a trainable
    weight's cast is cached for the forward pass, a frozen one's made anew: either way a tensor beside the weight);
    a bf16 base's products save the weights themselves and NF4's (bitsandbytes) the quantised ones, no new memory.
    Counted on the CPU at Orpheus's width on 128 tokens (what :func:`saved_tensor_bytes` counts with ``new_only``):
    one layer saves 222.0 MB that is no parameter's with fp32 weights under autocast, 201.3 MB of them its
    projections' bf16 copies (the calibration's constant, which :func:`activation_fit.at` leaves out as weights),
    against 16.8 MB with bf16 weights; with peft's LoRA r32 as Orpheus's script sets it, 223.2 and 21.9 MB.
    Without checkpointing every layer's copies live until its backward: Orpheus's own LoRA settings (fp32, no
    checkpointing) on the H200 took 40.69 GiB where the estimate without them said 34.94."""
    if setting.base_weights != "fp32" or setting.mixed_precision not in ("bf16", "fp16"):
        return 0.0, 0.0
    adapters = shape.lora(setting.lora_rank) // shape.layers if setting.lora_rank else 0
    return (shape.layer_linear + adapters) * 2.0, shape.embedding * 2.0


def embedding_gradient_buffers(setting: OrpheusSetting, shape: Shape, n: int, layer: float, logits: float) -> float:
    """Bytes of the trainable vocabulary matrices' gradients live during the backward pass beyond their ``.grad``
    (and beyond ``max(layer, logits)``, which the activations already count).

    autograd sums the gradients one parameter receives from several places in a buffer beside its ``.grad``,
    which lives until the last of them arrives. It adds a new gradient into that buffer in place when the buffer
    is a contiguous tensor of its own, and out of place otherwise: the old sum, the new gradient and their sum,
    three matrix-sized buffers at once. A gradient that arrives alone is added into an existing ``.grad`` in place
    (the estimate assumes accumulation, as every profile accumulates). ``benchmarks/
    orpheus_embedding_gradient_transient.py`` counts them on the CPU at Orpheus's own 156,940 x 3,072 in bf16, for
    each micro-batch, whether ``.grad`` exists yet or not (``benchmarks/results/
    orpheus_embedding_gradient_transient_fused_vs_checkpointed_2026-11-27_cpu.json``):

    * The engine's loss (``fused_loss``, :mod:`..linear_cross_entropy`) sums its chunks' weight gradients in place,
      and the tied lookup (:mod:`..tied_gradient`) adds its rows where they went (``benchmarks/results/
      orpheus_embedding_gradient_transient_tied_2026-11-27_cpu.json``, the second micro-batch): ``"direct"``
      straight into ``.grad``, no matrix beside it (CPU: 0 buffers); ``"handed"`` into one buffer made beside one
      chunk's logits and held through the layers' recomputation (CPU: 1 buffer); ``"separate"``, torch's lookup,
      its own dense gradient added to the loss's: two at once (CPU: 2 buffers, 2.00-2.20 embeddings above the
      start).
    * The loss before it (each chunk checkpointed apart, ``fused_loss=False``; the H200 run of 2026-11-27) gave a
      gradient per chunk, each a transposed view, summed out of place: three matrices at once (CPU: 3 buffers,
      3.02 embeddings).
    * ``embeddings_in_full`` trains two untied copies, and a full fine-tune of an untied model (``shape.tied``
      False) its two matrices: the output projection's gradients come from the loss (three buffers while several
      chunks' are summed out of place, one otherwise; its ``.grad`` takes the sum before the layers), the
      embedding's alone from the lookup at the end (one buffer, when the activations are gone). Counted with the
      engine's loss at hidden 512: one embedding more above the start of an accumulating micro-batch than tied
      (``benchmarks/results/orpheus_embedding_gradient_transient_untied_2026-11-27_cpu.json``).
    """
    dense = 4.0 if setting.base_weights == "fp32" else 2.0
    matrix = shape.embedding * dense
    summed_out_of_place = not (setting.chunked_loss and setting.fused_loss)
    if not setting.lora_rank and shape.tied:
        at_once = 3 if summed_out_of_place else {"direct": 0, "handed": 1, "separate": 2}[setting.tied_gradient]
        beside = matrix if at_once else 0.0  # the buffer the loss makes, held to the end of the pass
        peak = max(logits + beside, at_once * matrix, layer + beside)
    elif setting.embeddings_in_full or not setting.lora_rank:
        chunks = -(-setting.batch_size * max(1, n - PROMPT_TOKENS) // CE_CHUNK) if setting.chunked_loss else 1
        several = chunks > 1 and not setting.fused_loss
        peak = max(logits + (0 if several else matrix), 3 * matrix if several else 0, layer, matrix)
    else:
        return 0.0
    return max(0.0, peak - max(layer, logits))


def saved_tensor_bytes(n: int, depth: int, precision: str, checkpointing: bool, lora: bool, seed: int = 0,
                       new_only: bool = False) -> int:
    """Bytes autograd saves for backward in one training forward of ``depth`` real-width decoder layers (random
    weights, a tiny vocabulary: the loss is counted apart) on one sequence of ``n`` tokens; each storage once.
    ``precision``: "fp32" (fp32 weights, no autocast), "bf16" (fp32 weights under bf16 autocast: Orpheus's own
    full fine-tune) or "bf16_base" (bf16 weights under bf16 autocast, as the app's NF4 and bf16 bases hold their
    embedding and norms, so the hidden states between the layers are bf16). ``new_only``: leave out what is a
    parameter's own storage (no memory beyond the weights)."""
    import gc

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from alltalk_gui.core.engines.orpheus.model import add_lora, set_checkpointing

    torch.manual_seed(seed)
    config = dict(ORPHEUS_3B_CONFIG, num_hidden_layers=depth, vocab_size=64, tie_word_embeddings=True)
    lm = LlamaForCausalLM(LlamaConfig(**config)).train()
    if precision == "bf16_base":
        lm = lm.to(torch.bfloat16)
    lm.config._attn_implementation = "sdpa"
    if lora:
        add_lora(lm, 16, 32.0)
    set_checkpointing(lm, checkpointing)
    parameters = {p.untyped_storage().data_ptr() for p in lm.parameters()} if new_only else set()
    seen: dict[tuple[int, int], int] = {}
    kept: list[Any] = []  # every saved tensor stays alive until the end, so no address is reused and counted once

    def pack(tensor):
        storage = tensor.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        if storage.data_ptr() not in parameters:
            seen[key] = storage.nbytes()
        kept.append(tensor)
        return key  # not the tensor: a graph that holds its own saved tensors through a hook is never freed

    def unpack(_key):
        raise RuntimeError("measuring only: no backward pass")

    ids = torch.randint(0, 64, (1, n))
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision in ("bf16", "bf16_base"))
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack), autocast:
        hidden = lm.model(input_ids=ids, use_cache=False).last_hidden_state
    del hidden, lm, kept[:]
    gc.collect()
    return sum(seen.values())


PRECISIONS = ("fp32", "bf16", "bf16_base")  # see saved_tensor_bytes


def calibrate(lengths: tuple[int, ...] = (128, 256, 512), precisions: tuple[str, ...] = PRECISIONS) -> dict[str, Any]:
    """The per-token coefficients (``per_token`` of the calibration file), measured on the CPU.

    ``layer``: one decoder layer's saved bytes (depth 2 minus depth 1, no checkpointing); ``layer_input``: what a
    checkpointed layer keeps (the same difference with checkpointing); each fitted as a + b*n + c*n^2; for each
    of ``precisions`` (:func:`saved_tensor_bytes`).
    """
    result: dict[str, Any] = {}
    for kind in ("full", "lora"):
        result[kind] = {}
        for precision in precisions:
            series: dict[str, list[float]] = {"layer": [], "layer_input": []}
            for n in lengths:
                lora = kind == "lora"
                series["layer"].append(saved_tensor_bytes(n, 2, precision, False, lora)
                                       - saved_tensor_bytes(n, 1, precision, False, lora))
                series["layer_input"].append(saved_tensor_bytes(n, 2, precision, True, lora)
                                             - saved_tensor_bytes(n, 1, precision, True, lora))
            result[kind][precision] = activation_fit.fit(lengths, series)
    return result


def write_calibration(path: Path) -> dict[str, Any]:
    """Run :func:`calibrate` and write the calibration file (atomically); returns what was written."""
    return activation_fit.write(path, {
        "device": "cpu (saved-tensor bytes are device-independent; CPU sdpa saves no n^2 scores)",
        "model": "Orpheus 3B width (hidden 3072, MLP 8192, 24 heads / 8 KV heads), random weights, depth 1 and 2; "
                 "LoRA rank 16 on the seven projections for 'lora'",
        "lengths_tokens": [128, 256, 512],
        "written_by": "python -m alltalk_gui.core.engines.orpheus.memory_estimate PATH",
    }, "per_token", calibrate)


if __name__ == "__main__":  # python -m alltalk_gui.core.engines.orpheus.memory_estimate resources/profiles/orpheus/activation_calibration.json
    import sys

    write_calibration(Path(sys.argv[1]))
