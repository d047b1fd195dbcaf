"""Attention as PyTorch 2 runs it on CUDA, for a recording made elsewhere.

torch 1.13's multi-head attention (and any attention on the CPU before
torch 2) computes the full L x L attention matrix, softmax and dropout
mask and keeps them for backward; torch 2 on CUDA runs the same module
through scaled_dot_product_attention's memory-efficient kernel, which
keeps only its output and a logsumexp per row. A recording that is to
stand for a torch 2 GPU job replaces torch.nn.functional's
multi_head_attention_forward, while it records, by torch 2's own sequence
of operators around that kernel (the packed in-projection made contiguous,
the output permuted back, the out-projection) and a stand-in for the
kernel whose allocations are those measured on an H200 (cuda_table
"efficient_attention"). Only the common case is replaced (self-attention
with one packed in-projection, no masks, need_weights=False, as
nn.TransformerEncoderLayer trains); any other call runs torch's own.

The stand-in computes attention's values without dropout, off the
recording (record.unrecorded), so a CPU step still trains sensibly; on
meta tensors there are no values to compute.
"""
import math

from . import record as _record

NAME = "efficient_attention"


def _lse_len(n):
    # the kernel pads logsumexp's rows to a multiple of 32
    return (n + 31) // 32 * 32


def _function(torch):
    class EfficientAttention(torch.autograd.Function):
        """scaled_dot_product_attention's memory-efficient CUDA kernel, by its
        allocations: forward an output laid out (B, L, H, D) and a float32
        logsumexp (B, H, L rounded up to 32); backward four query-sized
        buffers (the three gradients and one more), grad_out * out, its row
        sums, one (B, H, L) float32 buffer and a workspace of a query's size
        plus 4 KiB (tests/tools/data/h200/torch211_h200_full_default.pickle.gz,
        entries 64-65 and 340-351)."""

        @staticmethod
        def forward(ctx, q, k, v):
            B, H, L, D = q.shape
            with _record.estimated(NAME):
                out = q.new_empty((B, L, H, D)).permute(0, 2, 1, 3)
                lse = q.new_empty((B, H, _lse_len(L)), dtype=torch.float32)
            if q.device.type != "meta":
                with _record.unrecorded():
                    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D), dim=-1)
                    out.copy_(w @ v)
            ctx.save_for_backward(q, k, v, out, lse)
            return out

        @staticmethod
        def backward(ctx, gout):
            q, k, v, out, lse = ctx.saved_tensors
            B, H, L, D = q.shape
            with _record.estimated(NAME):
                extra = q.new_empty((B, L, H, D))
                gq, gk, gv = (q.new_empty((B, L, H, D)).permute(0, 2, 1, 3) for _ in range(3))
                prod = gout * out
                delta = prod.sum(-1, dtype=torch.float32)
                buf = q.new_empty((B, H, L), dtype=torch.float32)
                ws = q.new_empty((q.numel() * q.element_size() + 4096,), dtype=torch.uint8)
            if q.device.type != "meta":
                with _record.unrecorded(), torch.enable_grad():
                    qq, kk, vv = (t.detach().requires_grad_() for t in (q, k, v))
                    w = torch.softmax(qq @ kk.transpose(-2, -1) / math.sqrt(D), dim=-1)
                    g = torch.autograd.grad(w @ vv, (qq, kk, vv), gout)
                    for dst, src in zip((gq, gk, gv), g):
                        dst.copy_(src)
            del extra, prod, delta, buf, ws
            return gq, gk, gv

    return EfficientAttention


def mha_forward(torch, original):
    """torch 2's multi_head_attention_forward for the common case (module
    docstring), else original(...)."""
    F = torch.nn.functional
    attention = _function(torch)

    def forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
                add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True, key_padding_mask=None,
                need_weights=True, attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
                k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                **rest):
        common = (query is key and key is value and query.dim() == 3 and not need_weights and attn_mask is None
                  and key_padding_mask is None and bias_k is None and bias_v is None and not add_zero_attn
                  and not use_separate_proj_weight and static_k is None and static_v is None
                  and all(k == "is_causal" and not v for k, v in rest.items()))
        if not common:
            return original(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                            bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                            training=training, key_padding_mask=key_padding_mask, need_weights=need_weights,
                            attn_mask=attn_mask, use_separate_proj_weight=use_separate_proj_weight,
                            q_proj_weight=q_proj_weight, k_proj_weight=k_proj_weight, v_proj_weight=v_proj_weight,
                            static_k=static_k, static_v=static_v, average_attn_weights=average_attn_weights,
                            **rest)
        L, B, E = query.shape
        D = E // num_heads
        # torch 2's _in_projection_packed for self-attention: one linear, made
        # contiguous as (3, L, B, E)
        proj = F.linear(query, in_proj_weight, in_proj_bias)
        proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        q, k, v = proj[0], proj[1], proj[2]
        q, k, v = (t.view(L, B * num_heads, D).transpose(0, 1).view(B, num_heads, L, D) for t in (q, k, v))
        out = attention.apply(q, k, v)
        out = out.permute(2, 0, 1, 3).contiguous().view(B * L, E)
        out = F.linear(out, out_proj_weight, out_proj_bias)
        return out.view(L, B, out.size(1)), None

    return forward
