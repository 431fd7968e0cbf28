"""The gradient of Orpheus's tied vocabulary matrix in a full fine-tune, with no matrix-sized buffer beside its
``.grad`` (one under torch.distributed).

The 156,940 x 3,072 matrix is both the embedding and the output projection. Its gradient from the loss is a full
matrix (every row gets a share of the softmax); its gradient from the embedding lookup touches only the rows of
the tokens in the batch (about 2,500 of 156,940 for a 30 s clip), yet torch's lookup backward makes a full dense
matrix for it, which autograd then adds to the loss's, and the sum to ``.grad``. Through the whole backward pass
one 0.9 GiB bf16 matrix lives beside ``.grad``, and two at its end: the largest transient of the High profile
(counted on the CPU by ``benchmarks/orpheus_embedding_gradient_transient.py``).

A :class:`SharedGradient`, made for each forward pass, carries the matrix's gradient from the loss's backward
(:mod:`.linear_cross_entropy`, first in the pass) to the lookup's (:class:`TiedLookup`, last: every loss depends on
the lookup), in one of two ways:

* **direct** (a process of its own, as the app trains on one card): the loss adds its chunks' gradients straight
  into the matrix's ``.grad`` (making it, when there is none, as autograd would), the lookup adds its rows there
  too, and neither hands autograd a gradient for the matrix. Nothing matrix-sized lives beside ``.grad``.
  Accumulation over micro-batches, loss scaling, clipping and the optimizer read ``.grad`` as before.
* **handed on** (under torch.distributed: DDP and FSDP learn of a parameter's gradient from autograd, through
  hooks on its accumulation): the loss hands its gradient to the lookup instead of to autograd; the lookup adds
  its rows into it in place and returns it as the matrix's one gradient, which autograd adds into ``.grad``. One
  buffer beside ``.grad``.

Where the loss is not computed (no scored token), the lookup alone gives the matrix its rows.
"""

from __future__ import annotations

import torch
from torch import nn


class SharedGradient:
    """Where the tied ``weight``'s gradient goes in one forward pass's backward (see the module docstring)."""

    def __init__(self, weight: torch.Tensor, direct: bool) -> None:
        self.weight, self.direct = weight, direct
        self._pending: torch.Tensor | None = None

    @classmethod
    def for_this_process(cls, weight: torch.Tensor) -> "SharedGradient":
        """Direct in a process of its own; handed on where torch.distributed runs (DDP's and FSDP's hooks)."""
        distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
        return cls(weight, direct=not distributed)

    def loss_buffer(self) -> torch.Tensor:
        """The matrix the loss adds its chunks' gradients into: ``.grad`` itself (direct) or a fresh one."""
        return self._grad() if self.direct else self._fresh()

    def loss_done(self, gradient: torch.Tensor) -> None:
        """The loss's gradient, complete: kept for the lookup (handed on; direct: already in ``.grad``)."""
        if self.direct:
            return
        if self._pending is None:
            self._pending = gradient
        else:  # a second loss term through the same matrix: summed here as autograd would
            self._pending.add_(gradient)

    def lookup_buffer(self) -> torch.Tensor:
        """The matrix the lookup adds its rows into: ``.grad`` (direct), the loss's gradient given up (the caller
        returns it to autograd as its only reference, so it can become ``.grad`` without a copy), or a fresh one
        where no loss ran."""
        if self.direct:
            return self._grad()
        gradient, self._pending = self._pending, None
        return gradient if gradient is not None else self._fresh()

    def _grad(self) -> torch.Tensor:
        if self.weight.grad is None:
            self.weight.grad = self._fresh()
        return self.weight.grad

    def _fresh(self) -> torch.Tensor:
        return torch.zeros_like(self.weight, memory_format=torch.contiguous_format)


def tied_lookup(ids: torch.Tensor, weight: torch.Tensor, shared: SharedGradient,
                padding_idx: int | None = None) -> torch.Tensor:
    """``nn.functional.embedding(ids, weight, padding_idx)`` whose backward adds its rows into the matrix's gradient
    where ``shared`` says, instead of making a matrix of its own."""
    return TiedLookup.apply(ids, weight, shared, padding_idx)


class TiedLookup(torch.autograd.Function):
    """See the module docstring; call it through :func:`tied_lookup`."""

    @staticmethod
    def forward(ctx, ids, weight, shared, padding_idx):
        ctx.save_for_backward(ids)
        ctx.shared, ctx.padding_idx = shared, padding_idx
        return nn.functional.embedding(ids, weight, padding_idx)

    @staticmethod
    def backward(ctx, grad_rows):
        if not ctx.needs_input_grad[1]:
            return None, None, None, None
        (ids,) = ctx.saved_tensors
        gradient = ctx.shared.lookup_buffer()
        add_rows_(gradient, ids, grad_rows, ctx.padding_idx)
        return None, None if ctx.shared.direct else gradient, None, None


def add_rows_(matrix: torch.Tensor, ids: torch.Tensor, rows: torch.Tensor, padding_idx: int | None = None) -> None:
    """``matrix[ids[i]] += rows[i]`` for every position ``i``, in place, as torch's embedding backward sums them:
    the rows of one id are summed in fp32 first and added to the matrix once, in its own type (a bf16 matrix then
    gets the same values as the dense gradient torch would make and add). The padding id's row gets nothing.

    No step depends on how many distinct ids there are (``torch.unique`` or a boolean mask would make the host wait
    for the card): the positions are sorted by id, each run of equal ids summed into one row of a table as long as
    the batch, and the table's rows added at their ids; the unused rows of the table are zeros, added to row 0."""
    ids = ids.reshape(-1)
    rows = rows.reshape(ids.numel(), -1)
    if padding_idx is not None:
        rows = rows * (ids != padding_idx).unsqueeze(1).to(rows.dtype)
    order = torch.argsort(ids, stable=True)
    ordered = ids[order]
    starts = torch.ones_like(ordered, dtype=torch.bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    run = starts.cumsum(0) - 1  # each sorted position's run of equal ids: 0, 1, ...
    sums = rows.new_zeros(rows.shape, dtype=torch.float32).index_add_(0, run, rows[order].float())
    # The id of each run: every position of a run writes the same id, so which write lands last does not matter.
    owners = torch.zeros_like(ids).scatter_(0, run, ordered)
    matrix.index_add_(0, owners, sums.to(matrix.dtype))
