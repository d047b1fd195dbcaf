"""What the CPU does not show: CUDA-only memory, as a table.

A step recorded on the CPU (galloc.record) has every tensor storage its
operators make, but none of what PyTorch allocates only on a GPU. These
entries add it to a recording; each says what it is, how many bytes, when
the job makes it, where the figure comes from (PyTorch's code or a
measurement in this repository) and the PyTorch versions it holds for.
Every event added carries its entry's name (Event.estimated), so a report
can say what is estimated rather than recorded (docs/estimate.md).

Entries of kind "allocation" go through PyTorch's caching allocator (they
are in allocated and reserved memory and are replayed); kind "outside" is
device memory the allocator never sees (the CUDA context), which the
smallest device must hold besides the allocator's reserved peak; kind
"stand-in" is a CUDA kernel whose allocations a stand-in makes while the
step is recorded (kernels.py), only when the recording asks for it.

Known and not added (docs/estimate.md, "Limits"): cuDNN workspaces
(convolutions: sized by the algorithm cuDNN picks on the device), flash
attention and attention other than nn.MultiheadAttention's common case,
fused optimizer kernels (fused=True).
"""
from dataclasses import dataclass

# Operators that run a cuBLAS GEMM on CUDA (at::cuda::blas::gemm and friends):
# the first of them on a thread creates that thread's handle's workspace.
GEMM_OPS = frozenset(("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::mv",
                      "aten::addmv", "aten::dot", "aten::vdot", "aten::_addmm_activation", "aten::addr"))
# Operators that go to cuBLASLt (gemm_and_bias, torch >= 2: addmm with a
# bias vector; measured as the first forward linear's addmm).
LT_OPS = frozenset(("aten::addmm", "aten::_addmm_activation"))


@dataclass(frozen=True)
class Entry:
    """One CUDA-only allocation."""
    name: str            # the label events carry ("cublas_workspace")
    kind: str            # "allocation" (through the caching allocator) or "outside" (not the allocator's)
    what: str            # in words
    when: str            # when the job makes it, as the estimate places it
    source: str          # PyTorch's code, or the measurement in this repository
    versions: str        # the PyTorch versions the figure holds for

    def bytes_for(self, capability):
        """The entry's size on a device of compute capability (major, minor)."""
        return _SIZES[self.name](capability)


def _cublas_workspace(cc):
    # CublasHandlePool.cpp (getChosenWorkspaceSize): CUBLAS_WORKSPACE_CONFIG,
    # default 4096 KiB x 8 on compute capability 9.x, else :4096:2:16:8
    return 4096 * 1024 * 8 if cc[0] == 9 else 4096 * 1024 * 2 + 16 * 1024 * 8


_SIZES = {
    "cublas_workspace": _cublas_workspace,
    "cublaslt_workspace": lambda cc: 1 << 20,
    "cuda_context": lambda cc: 742 << 20,
    "efficient_attention": lambda cc: 0,  # sized by the tensors: kernels.py
}

TABLE = (
    Entry("cublas_workspace", "allocation",
          "cuBLAS workspace of a handle: one per (thread, stream); the forward runs on the main thread and "
          "backward on autograd's device thread, so a training step has two. Never freed (the handle pool "
          "keeps it); 32 MiB on compute capability 9.x (H100, H200), 8 MiB + 128 KiB elsewhere",
          "at the first GEMM operator (aten::mm, addmm, bmm, ...) of the forward and at the first of the "
          "backward",
          "measured: tests/tools/data/h200/torch211_h200_full_default.pickle.gz, entries 59 and 270 "
          "(33,554,432 bytes each, frames at::cuda::setWorkspaceForHandle, one in forward, one with no Python "
          "frame: the backward thread); the size rule: PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp "
          "(getChosenWorkspaceSize, CUBLAS_WORKSPACE_CONFIG)",
          "torch 2.11 measured on an H200; the rule is PyTorch's code for torch 2.x; torch 1.13 sized it "
          "from CUBLAS_WORKSPACE_CONFIG the same way off Hopper (not measured here)"),
    Entry("cublaslt_workspace", "allocation",
          "cuBLASLt workspace (1 MiB, CUBLASLT_WORKSPACE_SIZE), one per stream, never freed",
          "at the first addmm of the forward (a linear layer with a bias)",
          "measured: tests/tools/data/h200/torch211_h200_full_default.pickle.gz, entry 68 (1,048,576 bytes, "
          "frame at::cuda::getCUDABlasLtWorkspace); PyTorch aten/src/ATen/cuda/CUDABlas.cpp",
          "torch 2.11 measured on an H200; torch 1.13 allocated no cuBLASLt workspace through the caching "
          "allocator (not added for it)"),
    Entry("cuda_context", "outside",
          "the CUDA context, kernels' modules and library handles: device memory outside the caching "
          "allocator (not in reserved); the smallest device must hold it besides the reserved peak",
          "before the job's first allocation, for the whole run",
          "measured: tests/tools/data/h200/torch211_h200_full_default.json, oom_message: 988 MiB in use by "
          "the process with 211.30 + 34.70 MiB reserved by PyTorch, so 742 MiB outside it",
          "torch 2.11 with CUDA 13 on an H200; it varies with the CUDA version, the GPU and the kernels "
          "loaded (lazy loading): a measurement, not a rule"),
)


TABLE = TABLE + (
    Entry("efficient_attention", "stand-in",
          "scaled_dot_product_attention's memory-efficient CUDA kernel in torch 2's multi-head attention: "
          "forward keeps its output and a float32 logsumexp (B, H, L rounded up to 32) instead of the L x L "
          "matrix, softmax and dropout mask; backward makes four query-sized buffers, grad_out * out, its "
          "row sums, a (B, H, L) float32 buffer and a workspace of a query's size + 4 KiB",
          "while recording with attention=\"torch2-efficient\": in each nn.MultiheadAttention call of the "
          "common case (self-attention, packed in-projection, no masks, need_weights=False)",
          "measured: tests/tools/data/h200/torch211_h200_full_default.pickle.gz, entries 55-68 (forward of "
          "the first layer) and 340-351 (its backward), frames at::_ops::scaled_dot_product_attention and "
          "_scaled_dot_product_efficient_attention_backward; the operators around it: torch 2.11's "
          "functional.py (_in_projection_packed, multi_head_attention_forward) as its frames show them",
          "torch 2.11 measured on an H200, float32, dropout 0.1; flash attention (half precision) differs "
          "(not modelled)"),
)


def entry(name):
    """The TABLE entry named name."""
    for e in TABLE:
        if e.name == name:
            return e
    raise KeyError(name)


def applies(e, torch_version):
    """Whether entry e holds for the PyTorch that recorded (its version string)."""
    major = int(torch_version.split(".")[0])
    if e.name == "cublaslt_workspace":
        return major >= 2
    return True
