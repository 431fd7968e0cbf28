"""Orpheus's Llama for training: loading it (4-bit NF4, bf16 or fp32), LoRA, checkpointing, and the loss.

**The module the loop trains** is :class:`OrpheusLM`, a thin module around transformers' ``LlamaForCausalLM``
whose ``forward(batch)`` returns the loss itself. The loss is computed inside the forward pass so that DDP and
FSDP wrap one module whose forward does all the work (gradients synchronise; FSDP gathers the root's tied
embedding for the output projection), and so that logits are never made for every position.

**The loss** is the cross-entropy of the answer only - the audio tokens, end of speech and end of AI - with the
prompt masked (Orpheus's own scripts score the whole sequence). Orpheus's vocabulary has 156,940 tokens: logits
for a 30 s clip (2,461 scored tokens) would be 1.4 GiB in fp32, more again for their gradient. The loss takes the
final hidden states of the scored positions only and projects them :data:`CE_CHUNK` at a time through one autograd
function (:mod:`.linear_cross_entropy`) that keeps no logits: at most one chunk's (256 x 156,940 x 4 bytes =
154 MiB) exists at once in the forward pass and again in the backward pass, which recomputes each chunk and adds
its gradient of the vocabulary matrix in place; in a full fine-tune into the matrix's ``.grad`` itself, where the
embedding lookup then adds its rows too (:mod:`.tied_gradient`). (Until 2026-11-27 each chunk was checkpointed
apart, and autograd summed the chunks' full-size weight gradients out of place, then the lookup's dense gradient:
three 0.9 GiB matrices at once beside ``.grad`` in a full fine-tune; now none, one under torch.distributed.) Its
parts: ``audio_ce`` (the codes) and ``end_ce`` (the two end tokens: an untrained stop is what makes speech run on).

**Levers**: the base in 4-bit NF4 with double quantisation (bitsandbytes, through transformers'
``BitsAndBytesConfig``; compute in bf16), in bf16, or in fp32; LoRA (peft) on the attention and MLP
projections of every decoder layer; transformers' activation checkpointing of the decoder layers (reentrant:
fewer operations for the host to dispatch, see :func:`set_checkpointing`). With LoRA nothing else trains: the
embedding and the tied output projection stay as they are. Orpheus's vocabulary already holds every audio token
and the speaker name is ordinary text, so a fine-tune needs no new row (Orpheus's own LoRA script trains both
482 M matrices in full, which is most of its memory; the Low profile's test shows the adapters alone learn).
Where the embedding is a matrix of its own (a base such an adapter untied), a LoRA run keeps it in host memory
and moves only the rows it looks up to the card (:func:`keep_embedding_on_host`): 0.90 GiB less on the card.

**Checkpoints**: when parts are frozen, the module's state dict holds only what trains (the adapters: 24 M
values at rank 16 instead of 3.3 B), through state-dict hooks that work under any wrapper; a resume and the
preview rebuild the frozen rest from the base folder, which the run's config names.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

import torch
from torch import nn

from alltalk_gui.core.engines.orpheus.linear_cross_entropy import linear_cross_entropy
from alltalk_gui.core.engines.orpheus.options import BASE_WEIGHTS
from alltalk_gui.core.engines.orpheus.tied_gradient import SharedGradient, tied_lookup
from alltalk_gui.core.engines.orpheus.tokens import IGNORE, SpecialTokens

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
DECODER_LAYER = "LlamaDecoderLayer"    # FSDP wraps these (transformer-based auto wrap)
CE_CHUNK = 256                          # scored tokens projected to the vocabulary at a time
LOSS_PARTS = ("audio_ce", "end_ce")


def load_lm(folder: str | os.PathLike[str], weights: str, device: Any = "cpu"):
    """The base folder's ``LlamaForCausalLM`` with its weights stored as ``weights`` (one of :data:`BASE_WEIGHTS`).

    NF4 weights are quantised as they load, on ``device`` (bitsandbytes packs them differently per device);
    the others load on the CPU and the loop moves them.
    """
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    if weights not in BASE_WEIGHTS:
        raise ValueError(f"base weights must be one of {', '.join(BASE_WEIGHTS)}, not {weights!r}")
    kwargs: dict[str, Any] = {"local_files_only": True, "attn_implementation": "sdpa",
                              "dtype": torch.float32 if weights == "fp32" else torch.bfloat16}
    if weights == "nf4":
        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16)
        kwargs["device_map"] = {"": str(device)}
    lm = AutoModelForCausalLM.from_pretrained(str(folder), **kwargs)
    lm.config.use_cache = False  # training; generation asks for the cache itself
    if weights == "nf4" and torch.device(device).type == "cpu":
        _keep_cpu_weights_unpacked(lm)
    return lm


def load_model(info, weights: str, device: Any = "cpu"):
    """The ``LlamaForCausalLM`` of a checked base folder (:class:`~.files.OrpheusModelInfo`), weights stored as
    ``weights``: :func:`load_lm`, or, when the folder chosen was a LoRA adapter (``info.adapter``), its base with
    the adapter merged in (:func:`.adapter.merge_adapter`). The merge is done in bf16 (fp32 for ``weights=fp32``)
    on the CPU and only then, for nf4, are the merged weights quantised, as a QLoRA model is published: merging
    into 4-bit weights would round the base twice. For nf4 each layer is quantised (:func:`nf4_linear`) as soon as
    its adapter is merged (:func:`merge_lora`), so the host never holds the merged model in bf16: the base's
    safetensors are mapped, read a layer at a time, and a merged layer is the only copy of its weights until it is
    packed (``benchmarks/orpheus_adapter_merge.py``, docs/benchmarks.md)."""
    if info.adapter is None:
        return load_lm(info.folder, weights, device)
    from alltalk_gui.core.engines.orpheus.adapter import merge_adapter

    base = load_lm(info.folder, "fp32" if weights == "fp32" else "bf16")
    if weights != "nf4":
        lm = merge_adapter(base, info.adapter)
    else:
        lm = merge_adapter(base, info.adapter, partial(merge_lora, then=partial(nf4_linear, device=device)))
        _finish_nf4(lm, device)
    lm.config.use_cache = False
    return lm


def loaded_parameters(info, lm) -> int:
    """The parameter count of ``lm`` as :func:`load_model` built it from ``info``: the configuration's (a 4-bit
    weight is stored two to a byte, which ``numel()`` would count as half), plus the output projection a merged
    adapter left apart from a tied base's embedding (:func:`.adapter.merge_adapter`). The loop hands it to the
    memory estimate, which tells tied from untied by it."""
    head, embedding = lm.get_output_embeddings().weight, lm.get_input_embeddings().weight
    untied_here = head is not embedding and bool(info.config.get("tie_word_embeddings", False))
    return info.parameters + (head.numel() if untied_here else 0)


def quantise_nf4(lm, device: Any) -> None:
    """Quantise a loaded model's linear layers to 4-bit NF4 on ``device``, in place, as :func:`load_lm`'s
    ``BitsAndBytesConfig`` does while loading (double quantisation, bf16 compute, blocks of 64; the output
    projection stays as it is: the loss reads it as a plain matrix): :func:`nf4_linear` for each."""
    # By name, not a list of the modules: that would hold every bf16 layer until the last is quantised.
    for name in [n for n, m in lm.named_modules() if type(m) is nn.Linear and n.rpartition(".")[2] != "lm_head"]:
        parent, _, child = name.rpartition(".")
        setattr(lm.get_submodule(parent) if parent else lm, child, nf4_linear(lm.get_submodule(name), device))
    _finish_nf4(lm, device)


def nf4_linear(module, device: Any):
    """A plain ``nn.Linear`` as bitsandbytes' 4-bit NF4 layer on ``device`` (double quantisation, bf16 compute).
    bitsandbytes quantises a ``Params4bit`` when it moves to its device, packing the same bytes transformers does
    (checked: identical on the CPU); the bf16 weights are then the caller's to drop."""
    import bitsandbytes as bnb

    quantised = bnb.nn.Linear4bit(module.in_features, module.out_features, bias=module.bias is not None,
                                  compute_dtype=torch.bfloat16, compress_statistics=True, quant_type="nf4",
                                  device="meta")
    quantised.weight = bnb.nn.Params4bit(module.weight.data.to(torch.bfloat16), requires_grad=False,
                                         compress_statistics=True, quant_type="nf4")
    if module.bias is not None:
        quantised.bias = nn.Parameter(module.bias.data, requires_grad=False)
    return quantised.to(device)


def _finish_nf4(lm, device: Any) -> None:
    """What a model whose linear layers :func:`nf4_linear` quantised needs, as transformers' 4-bit loading leaves it.
    A 4-bit base trains only LoRA, so an untied input embedding stays on the host (:func:`keep_embedding_on_host`)
    and never passes through the card (the LoRA levers would move it back there)."""
    keep_embedding_on_host(lm)
    lm.to(device)  # the rest (norms, output projection) where the 4-bit layers are, as device_map does
    lm.is_loaded_in_4bit = True  # peft puts its bitsandbytes LoRA layers on 4-bit layers of such a model
    if torch.device(device).type == "cpu":
        _keep_cpu_weights_unpacked(lm)


def _keep_cpu_weights_unpacked(lm) -> None:
    """bitsandbytes 0.50 repacks a 4-bit layer's weights for its AVX-512 kernel the first time the layer runs in
    eval mode on such a CPU, and fails doing so for double-quantised weights (absmax holds the quantised
    scales); it also leaves the weights in a layout its training path does not read. Switching that off keeps
    the one layout bitsandbytes trains and evaluates with everywhere (dequantise, then matmul)."""
    from bitsandbytes.nn import Linear4bit

    for module in lm.modules():
        if isinstance(module, Linear4bit):
            module.support_avx512bf16_for_cpu = False


def add_lora(lm, rank: int, alpha: float, dropout: float = 0.0) -> None:
    """LoRA adapters on every decoder layer's attention and MLP projections, in place; only they train, in fp32
    (autocast does the maths in bf16; the adapters' small updates need the precision)."""
    from peft import LoraConfig, inject_adapter_in_model

    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(LORA_TARGETS),
                        bias="none")
    inject_adapter_in_model(config, lm)
    for name, parameter in lm.named_parameters():
        parameter.requires_grad_("lora_" in name)
        if parameter.requires_grad and parameter.dtype != torch.float32:
            parameter.data = parameter.data.float()


class HostEmbedding(nn.Module):
    """A frozen input embedding whose matrix stays in host memory while the rest of the model is on a card: the
    token ids go to the host, the rows are looked up there, and only the looked-up rows (batch x tokens x hidden)
    go to the ids' device. The matrix is a plain attribute, neither parameter nor buffer, so ``Module.to`` (the
    loop's placement by accelerate) leaves it where it is, and no state dict, optimizer or DDP sees it. The rows
    are the same values the card's lookup gives (a copy, no arithmetic), and a frozen matrix needs nothing back
    in the backward pass. Reading the ids on the host waits for the card to reach them (one wait a micro-batch)."""

    def __init__(self, embedding: nn.Embedding) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = embedding.num_embeddings, embedding.embedding_dim
        self.padding_idx = embedding.padding_idx
        self.weight = embedding.weight.detach().to("cpu")  # the same storage where it is on the host already

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        rows = nn.functional.embedding(input_ids.to(self.weight.device), self.weight, self.padding_idx)
        return rows.to(input_ids.device)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, on the host"


def keep_embedding_on_host(lm) -> bool:
    """Hold the input embedding of ``lm`` in host memory (:class:`HostEmbedding`) when it is a matrix of its own,
    not the output projection's; the caller's run must not train it (LoRA). True when it is held there.

    A merged adapter that carried ``embed_tokens``/``lm_head`` in full leaves Orpheus 3B untied: a second
    156,940 x 3,072 matrix (0.90 GiB in bf16) that a LoRA run only reads rows of. Tied, the output projection
    needs the matrix on the card anyway, and nothing moves. Call it before :func:`set_checkpointing`, whose hook
    goes on the embedding module."""
    embedding = lm.get_input_embeddings()
    if isinstance(embedding, HostEmbedding):
        return True
    if lm.get_output_embeddings().weight is embedding.weight:
        return False
    lm.set_input_embeddings(HostEmbedding(embedding))
    return True


def lora_config(lm):
    """The peft LoraConfig the adapters of ``lm`` were made with (None without adapters)."""
    return getattr(lm, "peft_config", {}).get("default")


def merge_lora(lm, then=None):
    """Fold the adapters into their base layers and drop them, one layer at a time (``then``: what each merged base
    layer becomes, e.g. :func:`nf4_linear`, before the next is merged); returns ``lm`` with transformers' plain
    keys.

    Each merged weight is a new tensor, not the old one changed in place: transformers maps a base's safetensors
    file, and a weight changed in place becomes private copies of the file's pages, which stay as long as the
    mapping does (while any tensor of that file is used: the embedding, to the end), so quantising it afterwards
    would free nothing. (Not peft's ``safe_merge``, which copies too but adds the delta rounded to bf16 first:
    its 4-bit bytes would not be those of the merged model transformers quantises.)"""
    from peft.tuners.lora import LoraLayer

    # By name, not a list of the modules: that would hold every merged layer (and its adapter) to the end.
    for name in [n for n, m in lm.named_modules() if isinstance(m, LoraLayer)]:
        module = lm.get_submodule(name)
        weight = module.get_base_layer().weight
        weight.data = weight.data.clone()  # read from the mapped file, written to memory of its own
        module.merge()
        parent_name, _, child = name.rpartition(".")
        merged = module.get_base_layer()
        setattr(lm.get_submodule(parent_name) if parent_name else lm, child, then(merged) if then else merged)
        del module, merged, weight
    if hasattr(lm, "peft_config"):
        del lm.peft_config
    return lm


def set_checkpointing(lm, enabled: bool, reentrant: bool = True) -> None:
    """Recompute each decoder layer's activations in the backward pass.

    torch's reentrant kind: each layer runs its forward pass under ``no_grad``, keeping only its input, and again
    with autograd in the backward pass. The non-reentrant kind tracks every tensor a layer saves through Python
    hooks instead; on the CPU it cost Medium's micro-step 18 % more host time and 19 % more operations, and High's
    16 % and 29 % (``benchmarks/orpheus_host_overhead.py``, its JSON of 2026-11-27): time a card waits, since the
    H200's micro-steps waited on the host. Reentrant recomputation needs the layers' input to require gradients,
    which a frozen embedding's output does not (LoRA): ``enable_input_require_grads`` sees to it (transformers 5
    does so itself, 4.57 only for peft's own models). It also passes gradients only to the hidden states, not to
    other tensors a layer is given: Llama's layers are given the rotary embeddings and the mask, which need none.
    transformers 5 renamed the switch (``activation_checkpointing_*``); 4.57 has only the old name."""
    if enabled:
        enable = getattr(lm, "activation_checkpointing_enable", None) or lm.gradient_checkpointing_enable
        enable({"use_reentrant": reentrant})
        if reentrant and getattr(lm, "_require_grads_hook", None) is None:
            lm.enable_input_require_grads()
        return
    on = getattr(lm, "is_activation_checkpointing", None)
    if on if on is not None else lm.is_gradient_checkpointing:
        (getattr(lm, "activation_checkpointing_disable", None) or lm.gradient_checkpointing_disable)()


def trainable(module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


class OrpheusLM(nn.Module):
    """Orpheus's causal LM whose forward pass returns the scored loss and its parts (see the module docstring)."""

    def __init__(self, lm, special: SpecialTokens, chunk: int = CE_CHUNK) -> None:
        super().__init__()
        self.lm = lm
        self.end_tokens = (special.end_of_speech, special.end_of_ai)
        self.chunk = chunk
        self.register_state_dict_post_hook(_drop_frozen_from_state)
        self.register_load_state_dict_post_hook(_forgive_frozen_on_load)

    def forward(self, input_ids, attention_mask, labels) -> dict[str, Any]:
        shared = self._shared_gradient()
        if shared is None:
            inputs = {"input_ids": input_ids}
        else:  # the lookup whose backward adds into the loss's gradient of the same matrix
            embedding = self.lm.get_input_embeddings()
            inputs = {"inputs_embeds": tied_lookup(input_ids, embedding.weight, shared, embedding.padding_idx)}
        hidden = self.lm.model(**inputs, attention_mask=attention_mask, use_cache=False).last_hidden_state
        targets = labels[:, 1:]
        scored = targets != IGNORE
        states, wanted = hidden[:, :-1][scored], targets[scored]  # position t predicts the token at t + 1
        losses = (self.token_losses(states, wanted, shared) if wanted.numel()
                  else hidden.new_zeros(0, dtype=torch.float32))
        ends = (wanted == self.end_tokens[0]) | (wanted == self.end_tokens[1])
        return {"loss": losses.mean(), "audio_ce": _mean(losses[~ends]), "end_ce": _mean(losses[ends])}

    def token_losses(self, states, wanted, shared: SharedGradient | None = None):
        """Each scored token's cross-entropy (fp32) from its final hidden state: one chunk of logits at a time,
        recomputed in the backward pass instead of kept. The projection's weight is read here, inside forward,
        where FSDP has gathered it (the tied embedding lives in the root)."""
        return linear_cross_entropy(states, _projection_weight(self.lm.lm_head), wanted, self.chunk, shared)

    def _shared_gradient(self) -> SharedGradient | None:
        """Where this forward pass's gradient of the tied matrix goes, when the output projection IS the
        embedding's matrix and it trains (a full fine-tune; :mod:`.tied_gradient`); None otherwise (LoRA,
        untied, no gradients)."""
        weight = self.lm.get_input_embeddings().weight
        if torch.is_grad_enabled() and weight.requires_grad and self.lm.lm_head.weight is weight:
            return SharedGradient.for_this_process(weight)
        return None


def _projection_weight(lm_head) -> torch.Tensor:
    """The output projection's matrix: a plain, unbiased ``nn.Linear`` in every profile (transformers' 4-bit
    loading leaves the tied output projection unquantised; LoRA does not target it)."""
    if type(lm_head) is not nn.Linear or lm_head.bias is not None:
        raise TypeError(f"Orpheus's loss needs a plain unbiased nn.Linear output projection, not {lm_head!r}")
    return lm_head.weight


def _mean(values):
    return values.mean() if values.numel() else values.new_zeros(())


def _frozen_names(module) -> list[str]:
    # Every name of a tied matrix (the embedding and the output projection share one).
    return [name for name, p in module.named_parameters(remove_duplicate=False) if not p.requires_grad]


def _drop_frozen_from_state(module, state_dict, prefix, local_metadata) -> None:  # noqa: ARG001
    """State-dict hook: leave out frozen parameters (and bitsandbytes' quantisation state beside them)."""
    frozen = [prefix + name for name in _frozen_names(module)]
    if not frozen:
        return
    frozen_set = set(frozen)
    for key in list(state_dict):
        if key.startswith(prefix) and (key in frozen_set or any(key.startswith(f + ".") for f in frozen)):
            del state_dict[key]


def _forgive_frozen_on_load(module, incompatible) -> None:
    """Load hook: frozen parameters are not in a checkpoint (they come from the base folder), so not missing."""
    frozen = _frozen_names(module)
    if not frozen:
        return
    keep = [k for k in incompatible.missing_keys if not any(k == f or k.endswith("." + f) for f in frozen)]
    incompatible.missing_keys[:] = keep


def loss(model, batch: dict[str, Any]) -> dict[str, Any]:
    """The engine's loss for the loop: the (possibly wrapped) :class:`OrpheusLM` called on a batch."""
    return model(batch["input_ids"], batch["attention_mask"], batch["labels"])
