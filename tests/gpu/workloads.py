"""The five workloads of the capture matrix (tests/gpu/capture_matrix.py), in
plain PyTorch, each a few training or decode steps from an empty allocator.

Each is a function (device, scale) -> summary that allocates, runs and drops
everything it made; the summary (the losses, or the decoded length) lets the
smoke test check what ran: checkpointing must not change the losses, and
the KV cache must hold every position. scale 1 is the GPU size (a second or two on an H200, a
few GiB at peak); the CPU smoke test (python/tests/test_workloads.py) runs
scale 0 (tiny shapes) to check the code itself without a GPU. Everything is
seeded, and no autotuning is on, so one workload allocates the same sequence
every time it runs in a process under one allocator setting: the capped reruns
meet the same requests the recorded run did.

Attention is written out (matmul, mask, softmax) rather than through
scaled_dot_product_attention, so the code runs on PyTorch 1.13 (Debian's, on
the CPU) as well as on 2.x.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as ckpt


def _dims(scale):
    """(d_model, heads, layers, vocab, batch, seq) at this scale."""
    if scale == 0:
        return 32, 2, 2, 64, 2, 16
    return 1024, 16, 6, 16384, 8, 512


class Block(nn.Module):
    """A pre-norm decoder block with causal self-attention."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, 4 * d)
        self.ff2 = nn.Linear(4 * d, d)

    def attend(self, x, cache=None):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        shape = (b, t, self.heads, d // self.heads)
        q, k, v = (z.reshape(shape).transpose(1, 2) for z in (q, k, v))
        if cache is not None:  # decode: the cache grows by t positions
            if cache:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[:] = [k, v]
        s = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        if cache is None or t > 1:
            n = k.shape[2]
            mask = torch.ones(t, n, dtype=torch.bool, device=x.device).tril(n - t)
            s = s.masked_fill(~mask, float("-inf"))
        y = (F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        return x + self.proj(y)

    def forward(self, x, cache=None):
        x = self.attend(x, cache)
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class Decoder(nn.Module):
    def __init__(self, d, heads, layers, vocab, checkpoint=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.checkpoint = checkpoint

    def forward(self, ids, caches=None):
        x = self.emb(ids)
        for i, blk in enumerate(self.blocks):
            if caches is not None:
                x = blk(x, caches[i])
            elif self.checkpoint:
                x = ckpt.checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return self.head(self.ln(x))


def _train_decoder(device, scale, seqs, checkpoint):
    d, h, layers, vocab, batch, _ = _dims(scale)
    gen = torch.Generator(device=device)
    gen.manual_seed(0)
    torch.manual_seed(0)
    model = Decoder(d, h, layers, vocab, checkpoint).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    losses = []
    for seq in seqs:
        ids = torch.randint(0, vocab, (batch, seq + 1), device=device, generator=gen)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        del ids, logits, loss
    del model, opt
    return losses


def gpt_fixed(device, scale):
    """A decoder-only transformer's training steps at one sequence length."""
    seq = _dims(scale)[5]
    return _train_decoder(device, scale, [seq] * 4, checkpoint=False)


def gpt_varlen(device, scale):
    """The same, with the sequence length changing every step (block sizes vary, the cache is reused)."""
    seq = _dims(scale)[5]
    return _train_decoder(device, scale, [seq * f // 8 for f in (2, 6, 4, 8, 1, 7)], checkpoint=False)


def gpt_ckpt(device, scale):
    """The fixed-length steps with every block's activations checkpointed (recomputed in backward)."""
    seq = _dims(scale)[5]
    return _train_decoder(device, scale, [seq] * 4, checkpoint=True)


def kv_decode(device, scale):
    """Inference: a prefill, then decode steps whose KV cache grows by one position each (torch.cat)."""
    d, h, layers, vocab, batch, seq = _dims(scale)
    torch.manual_seed(0)
    gen = torch.Generator(device=device)
    gen.manual_seed(0)
    model = Decoder(d, h, layers, vocab).to(device).eval()
    with torch.no_grad():
        caches = [[] for _ in range(layers)]
        ids = torch.randint(0, vocab, (batch * 2, seq // 2), device=device, generator=gen)
        nxt = model(ids, caches)[:, -1:].argmax(-1)
        for _ in range(seq // 4 if scale else 4):
            nxt = model(nxt, caches)[:, -1:].argmax(-1)
        positions = caches[0][0].shape[2]
        del caches, ids, nxt
    del model
    return positions


def cnn_bn(device, scale):
    """A convolutional network with BatchNorm: training steps on images."""
    torch.manual_seed(0)
    gen = torch.Generator(device=device)
    gen.manual_seed(0)
    width, batch, side = (8, 2, 16) if scale == 0 else (64, 64, 128)

    def stage(cin, cout, stride):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    model = nn.Sequential(stage(3, width, 1), stage(width, 2 * width, 2), stage(2 * width, 4 * width, 2),
                          stage(4 * width, 8 * width, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8 * width, 1000)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(4):
        x = torch.randn(batch, 3, side, side, device=device, generator=gen)
        y = torch.randint(0, 1000, (batch,), device=device, generator=gen)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        del x, y, loss
    del model, opt
    return losses


WORKLOADS = {f.__name__: f for f in (gpt_fixed, gpt_varlen, cnn_bn, kv_decode, gpt_ckpt)}
