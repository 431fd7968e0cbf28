"""One gradient buffer for Orpheus's tied vocabulary matrix in a full fine-tune: the loss's, with the embedding
lookup's rows added into it in place.

The 156,940 x 3,072 matrix is both the embedding and the output projection. Its gradient from the loss is a full
matrix (every row gets a share of the softmax); its gradient from the embedding lookup touches only the rows of
the tokens in the batch (about 2,500 of 156,940 for a 30 s clip), yet torch's lookup backward makes a full dense
matrix for it, which autograd then adds to the loss's. At the end of the backward pass two 0.9 GiB bf16 matrices
live beside ``.grad``: the largest transient of the High profile (counted on the CPU by
``benchmarks/orpheus_embedding_gradient_transient.py``).

Here the two share one buffer. The loss's backward (:mod:`.linear_cross_entropy`, which runs first) hands its
gradient to a :class:`SharedGradient` instead of to autograd; the lookup's backward (:class:`TiedLookup`, which
runs last: every loss depends on the lookup) takes that buffer, adds its rows into it in place and returns it
as the matrix's one gradient, which autograd then adds into ``.grad`` in place (or makes ``.grad``). The matrix
still receives exactly one gradient per backward pass through autograd, so gradient accumulation, loss scaling,
DDP's and FSDP's hooks see what they saw before.

A fresh :class:`SharedGradient` is made for each forward pass, so each graph hands its own buffer along. Where the
loss is not computed (no scored token), the lookup makes the buffer itself, as torch's lookup would.
"""

from __future__ import annotations

import torch
from torch import nn


class SharedGradient:
    """The loss's gradient of the tied matrix, waiting for the embedding lookup's backward (one forward pass)."""

    def __init__(self) -> None:
        self._pending: torch.Tensor | None = None

    def put(self, gradient: torch.Tensor) -> None:
        if self._pending is None:
            self._pending = gradient
        else:  # a second loss term through the same matrix: summed here as autograd would
            self._pending.add_(gradient)

    def take(self) -> torch.Tensor | None:
        """The buffer, given up: the caller returns it to autograd as the only reference, so it can become
        ``.grad`` without a copy."""
        gradient, self._pending = self._pending, None
        return gradient


def tied_lookup(ids: torch.Tensor, weight: torch.Tensor, shared: SharedGradient,
                padding_idx: int | None = None) -> torch.Tensor:
    """``nn.functional.embedding(ids, weight, padding_idx)`` whose backward adds its rows into the loss's gradient
    of ``weight`` (waiting in ``shared``) instead of making a matrix of its own."""
    return TiedLookup.apply(ids, weight, shared, padding_idx)


class TiedLookup(torch.autograd.Function):
    """See the module docstring; call it through :func:`tied_lookup`."""

    @staticmethod
    def forward(ctx, ids, weight, shared, padding_idx):
        ctx.save_for_backward(ids)
        ctx.shared, ctx.padding_idx = shared, padding_idx
        ctx.weight_shape, ctx.weight_dtype = weight.shape, weight.dtype
        return nn.functional.embedding(ids, weight, padding_idx)

    @staticmethod
    def backward(ctx, grad_rows):
        if not ctx.needs_input_grad[1]:
            return None, None, None, None
        (ids,) = ctx.saved_tensors
        gradient = ctx.shared.take()
        if gradient is None:
            gradient = grad_rows.new_zeros(ctx.weight_shape, dtype=ctx.weight_dtype)
        add_rows_(gradient, ids, grad_rows, ctx.padding_idx)
        return None, gradient, None, None


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
