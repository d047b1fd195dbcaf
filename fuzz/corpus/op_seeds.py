"""op_seeds.py: the seeds of the fuzz targets driven by op bytes or strings
(conf_fuzz, api_fuzz, replay_fuzz, sleep_fuzz, snapshot_roundtrip_fuzz),
written from code by make_seeds.py.

Each target's encoder below mirrors its harness's reader (fuzz/<target>.cc):
the same opcodes and argument bytes, and the same model of what is live where
the harness reads an argument only when something is (a free with nothing
live reads no pick byte), so each program does what its name says. The
programs are shaped like real use: PyTorch config strings as users write
them, training steps with weights, activations and an optimizer, a NCCL side
stream, CUDA graph pools, vLLM's sleep mode, memory snapshots taken as
torch.cuda.memory._record_memory_history records them.

Deterministic: no randomness, so make_seeds.py rewrites the same bytes.
"""
import struct


def u16(r):
    return list(struct.pack("<H", r & 0xFFFF))


# ---- conf_fuzz: byte 0 the mode, then the text -------------------------------
# mode bit 0: parse onto non-default settings; bits 1-3: errlen index
# ({0, 1, 2, 7, 32, 100, 256, 1024}); bit 4: split at '\n' into ga_conf_load's
# sources (PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF, GALLOC_CONF, create).
PARSE, PARSE_ONTO, LOAD = 6 << 1, 6 << 1 | 1, 16 | 7 << 1

CONF = [
    ("pt_expandable", PARSE, "expandable_segments:True"),
    ("pt_max_split", PARSE, "max_split_size_mb:512"),
    ("pt_split_roundup_gc", PARSE,
     "max_split_size_mb:512,roundup_power2_divisions:[256:1,512:2,1024:4,>:8],garbage_collection_threshold:0.8"),
    ("pt_async_backend", PARSE, "backend:cudaMallocAsync"),
    ("pt_rocm_spellings", PARSE_ONTO,
     "backend:hipMallocAsync,release_lock_on_hipmalloc:True,pinned_use_hip_host_register:True"),
    ("pt_spaces", PARSE, " expandable_segments : True , max_split_size_mb : 256 "),
    ("pt_2025_keys", PARSE,
     "expandable_segments:True,per_process_memory_fraction:0.9,graph_capture_record_stream_reuse:True"),
    ("pt_large_segments", PARSE_ONTO,
     "large_segment_size_mb:64,max_split_size_mb:256,max_non_split_rounding_mb:1024"),
    ("pt_pinned", PARSE, "pinned_use_cuda_host_register:True,pinned_num_register_threads:8,"
     "pinned_use_background_threads:True,pinned_reserve_segment_size_mb:64,pinned_free_catch_all:True"),
    ("pt_pinned_caps", PARSE_ONTO, "pinned_max_round_threshold_mb:128,pinned_max_cached_size_mb:1024,"
     "pinned_reserve_segment_size_mb:64,pinned_use_cuda_host_register:True"),
    ("pt_oom_keys", PARSE, "throw_on_cudamalloc_oom:True,release_lock_on_cudamalloc:True,roundup_power2_divisions:4"),
    ("galloc_sim", PARSE,
     "device_backend:sim,sim_capacity:80GiB,retry_pool_after_sync:True,expandable_segments:True"),
    ("load_env_layers", LOAD, "expandable_segments:True\n\nsim_capacity:24GiB\nmax_split_size_mb:128"),
    ("typo_lowercase_true", PARSE, "expandable_segments:true"),
    ("typo_gc_above_one", 5 << 1, "garbage_collection_threshold:1.2"),
    ("typo_split_below_20", 4 << 1, "max_split_size_mb:16,expandable_segments:True"),
]


def conf_seeds():
    return [(name, bytes([mode]) + text.encode()) for name, mode, text in CONF]


# ---- api_fuzz: 2 settings bytes, then ops (op % 15) --------------------------
# settings f: 1 expandable, 2 max_split_size_mb (20 + v % 100), 4 GC 0.(1 + v % 9),
# 8 roundup ((f >> 4) & 3 of 4, [256:1,512:2,>:4], [1:8,>:2], 16), 64 manual events.
# Sizes (cls % 8, r): 0 1 + r % 512; 1 1 + 16r % 1 MiB; 2 1 MiB + 1 + 160r % 9 MiB;
# 3 10 MiB + 1600r % 90 MiB; 4 100 MiB + ...; 5 huge; 6 zero; 7 512 (1 + r % 64). Device 256 MiB.
class Api:
    def __init__(self, f=0, v=0):
        self.b = [f, v]

    def malloc(self, cls, r, stream=0):
        self.b += [0, cls] + u16(r) + [stream]
        return self

    def free(self, pick=0):
        self.b += [3, pick]
        return self

    def bogus(self, how, off=0, pick=0):  # how 1: interior pointer; else a freed one; how 2: record_stream
        self.b += [5, how] + u16(off) + [pick]
        return self

    def record_stream(self, pick, stream):
        self.b += [6, pick, stream]
        return self

    def sync(self, stream):
        self.b += [7, stream]
        return self

    def empty_cache(self):
        self.b += [8]
        return self

    def fraction(self, b):  # b / 200
        self.b += [9, b]
        return self

    def pool(self, op, i=0):  # op % 4: 0 create (bits 4, 5: use_on_oom, no_split), 1 begin, 2 end, 3 release
        self.b += [10, op, i]
        return self

    def fault(self, b):  # (b >> 3) % 4: 0 once ahead, 1 from then on, 2 above a size, 3 off
        self.b += [11, b]
        return self

    def reset_peak(self):
        self.b += [12]
        return self

    def reset_accumulated(self):
        self.b += [13]
        return self

    def history(self, n):  # n % 3 enabled, (n >> 2) % 4 context, ring (1 + (n >> 4) % 8) * 8
        self.b += [14, 0, n]
        return self

    def annotation(self, start=True):
        self.b += [14, 1, 1 if start else 0]
        return self

    def summary(self, n):
        self.b += [14, 2, n]
        return self

    def snapshot(self, json=False):
        self.b += [14, 3, 1 if json else 0]
        return self

    def bytes(self):
        return bytes(self.b)


def api_seeds():
    out = []
    # A training loop: weights kept, per step activations grown then freed in
    # reverse, the optimizer's state made in the first step, peaks reset.
    a = Api()
    for w in (300, 900, 1500, 2100):
        a.malloc(2, w)  # 1-10 MiB weights
    for step in range(3):
        for act in (40, 800, 5000, 12000):
            a.malloc(2, act + step)
        a.malloc(0, 200 + step)  # a scalar loss
        for _ in range(5):
            a.free(4)  # the harness picks by address: a step's tensors, now and then a weight
        if step == 0:
            a.malloc(2, 300).malloc(2, 900)  # Adam's exp_avg, exp_avg_sq
        a.reset_peak()
    out.append(("training_loop", a.empty_cache().bytes()))
    # DDP: gradient buckets on the compute stream, reduced on NCCL's stream
    # (record_stream), freed before the side stream finishes, then synchronized.
    a = Api()
    for k in range(3):
        a.malloc(3, 1000 * k, 0).record_stream(0, 1)
    for _ in range(3):
        a.free(0)
    a.malloc(3, 2000, 0).sync(1).malloc(3, 2000, 0).free(0).free(0)
    out.append(("ddp_record_stream", a.bytes()))
    # CUDA graph capture: a private pool routed by thread, the capture's
    # allocations, end of capture, replays keep them, the pool released.
    a = Api(0, 0)
    a.malloc(2, 500).pool(0).pool(1, 0)
    for r in (100, 200, 300):
        a.malloc(1, r)
    a.pool(2, 0).malloc(1, 50).free(0).free(0).free(0).pool(3, 0).free(0).free(0)
    out.append(("cuda_graph_pool", a.bytes()))
    # A capped process (set_per_process_memory_fraction 0.5): fill to the cap,
    # OOM, empty the cache, lift the cap.
    a = Api(2, 80).fraction(100)
    for r in range(6):
        a.malloc(3, 3000 * r)
    a.malloc(4, 7).empty_cache().fraction(200).malloc(4, 7)
    out.append(("fraction_cap", a.bytes()))
    # Fragmentation: mid-sized blocks, every other one freed, then a request no
    # hole fits (the OOM path frees cached blocks and retries); expandable.
    for name, f in (("fragmentation_default", 0), ("fragmentation_expandable", 1)):
        a = Api(f, 0)
        for k in range(12):
            a.malloc(3, 5000 + 97 * k)
        for k in range(6):
            a.free(k)
        out.append((name, a.malloc(4, 4000).malloc(3, 200).bytes()))
    # Inference: a KV cache growing in blocks, old sequences evicted, under a
    # GC threshold and roundup divisions.
    a = Api(4 | 8 | 1 << 4, 5)
    for k in range(10):
        a.malloc(2, 600 * k + 7)
        if k >= 3:
            a.free(0)
    out.append(("kv_cache_gc_roundup", a.reset_accumulated().bytes()))
    # torch.cuda.memory._record_memory_history with a small ring, annotations,
    # memory_summary and _dump_snapshot (pickle and JSON) mid-run.
    a = Api(64, 0).history(62).annotation(True)  # ALL, context ALL, a ring of 32
    for k in range(5):
        a.malloc(k % 3, 700 * k, k % 2)
    a.free(1).annotation(False).summary(40).snapshot().snapshot(json=True).free(0)
    out.append(("record_history_snapshot", a.bytes()))
    # The device failing: one cudaMalloc fails (retried after freeing the
    # cache), then every one from the next on, then faults off.
    a = Api(2, 30).malloc(3, 100).free(0).fault(1).malloc(3, 9000).fault(1 << 3 | 2)
    a.malloc(2, 10).malloc(3, 9000).fault(3 << 3).malloc(3, 9000)
    out.append(("device_faults", a.bytes()))
    # Small tensors on several streams: the small pool's 2 MiB segments.
    a = Api()
    for k in range(16):
        a.malloc(k % 2 and 7 or 1, 37 * k, k % 3)
    for k in range(8):
        a.free(k)
    out.append(("small_pool_streams", a.sync(2).empty_cache().bytes()))
    # Caller mistakes: a double free and an interior pointer, refused.
    a = Api().malloc(2, 100).malloc(2, 200).free(0).bogus(0).bogus(1, 4096, 0).bogus(3, 0, 0)
    out.append(("double_free_interior", a.bytes()))
    return out


# ---- replay_fuzz: [configurations][device] then events (op % 16) -------------
# byte 0: 0 mod 8 every configuration of fit's grid, else pick % 8 of them;
# byte 1: device 256 MiB, 1 GiB, 4 GiB, 192 MiB. Streams: "0", "7", "0x7f00aa00", "3".
class Replay:
    def __init__(self, pick, memory):
        self.b = [pick, memory]
        self.live = 0
        self.requested = 0

    def alloc(self, cls, r, stream=0):  # cls % 6: 0 tiny, 1 small pool, 2 large, 3 own segment, 4 a share
        self.b += [0, cls] + u16(r) + [stream]
        self.live += 1
        return self

    def free(self, pick=0, stream=None):  # without a stream: freed where it was allocated
        self.b += [4]
        if self.live:
            self.b += [0, pick] if stream is None else [1, pick, stream]
            self.live -= 1
        return self

    def free_requested(self, pick=0):
        self.b += [6]
        if self.live:
            self.b += [pick]
            self.live -= 1
            self.requested += 1
        return self

    def free_completed(self, pick=0):
        self.b += [7]
        if self.requested:
            self.b += [pick]
            self.requested -= 1
        return self

    def record_stream(self, pick, stream):
        self.b += [8] + ([pick, stream] if self.live else [])
        return self

    def stream_sync(self, stream):
        self.b += [9, stream]
        return self

    def empty_cache(self):
        self.b += [10]
        return self

    def set_fraction(self, f):  # 0.05 + f / 210, 1.0 from 200
        self.b += [11, f]
        return self

    def oom(self, cls, r, stream=0):
        self.b += [12, cls] + u16(r) + [stream]
        return self

    def tag(self, what, c):  # what: 0 begin, 1 end, 2 sleep, 3 wake; c: tags (t0, t1, t0+t1, *)
        self.b += [14, what, c]
        return self

    def annotate(self):
        self.b += [15]
        return self

    def bytes(self):
        return bytes(self.b)


def replay_seeds():
    out = []
    # Transformer training on 1 GiB: weights, four steps of activations freed
    # in reverse, AdamW's state after the first, an annotation per step.
    t = Replay(3, 1)
    for w in (900, 1800, 2700):
        t.alloc(2, w)
    for step in range(4):
        t.annotate()
        for act in (3000, 9000, 20000, 400):
            t.alloc(2 if act < 10000 else 3, act + step)
        for _ in range(4):
            t.free(t.live - 1)
        if step == 0:
            t.alloc(2, 900).alloc(2, 1800)
    out.append(("transformer_steps", t.bytes()))
    # The same job's snapshot-style frees (free_requested, later
    # free_completed) and a tensor used on the side stream.
    t = Replay(5, 1).alloc(2, 100).alloc(2, 200, 1).record_stream(0, 1)
    t.free_requested(1).alloc(1, 300).free_completed(0).free_requested(0).stream_sync(1).free_completed(0)
    out.append(("deferred_frees_side_stream", t.free(0, 0).bytes()))
    # The traced run ran out (an oom entry), emptied its cache and went on.
    t = Replay(2, 3)
    for k in range(5):
        t.alloc(3, 8000 * k)
    t.free(1).free(2).oom(4, 30000).empty_cache().alloc(3, 100)
    out.append(("oom_then_empty_cache", t.bytes()))
    # A memory fraction set early (the cap galloc fit infers), allocations up to it.
    t = Replay(0, 2).set_fraction(95)
    for k in range(6):
        t.alloc(4, 500 * k)
        t.free(0)
    out.append(("fraction_then_fill", t.alloc(4, 9000).alloc(4, 9001).bytes()))
    # RLHF with vLLM's sleep mode: the policy's weights (t0) and KV cache (t1),
    # asleep (weights offloaded, cache discarded) while training runs, awake again.
    t = Replay(6, 2).tag(0, 0)
    for w in (4000, 4100):
        t.alloc(3, w)
    t.tag(1, 0).tag(0, 1).alloc(4, 2000).tag(1, 1)
    t.tag(2, 2 | 4 | 0 << 3).alloc(3, 5000).alloc(3, 6000).free(2).free(2).tag(3, 2)
    out.append(("rlhf_sleep_wake", t.bytes()))
    # Expert weights taking a large share each (MoE on a small device), one
    # freed, a bigger one tried: galloc fit's grid tells the settings apart.
    t = Replay(1, 3)
    for k in range(4):
        t.alloc(4, 2500 * k)
    out.append(("moe_big_shares", t.free(1).alloc(4, 60000).free(0).alloc(3, 7).bytes()))
    # Data loading with pinned buffers' device twins on stream 3, synchronized per batch.
    t = Replay(4, 0)
    for batch in range(5):
        t.alloc(1, 4000 + batch, 3).alloc(2, 50 + batch, 3).stream_sync(3).free(0).free(0)
    out.append(("loader_batches", t.empty_cache().bytes()))
    return out


# ---- sleep_fuzz: [settings] then ops (op % 12) -------------------------------
# settings: 1 expandable, 2 a 48 MiB device (else 96 MiB). Tags: a, b.
# Lists (b % 4): a, b, "a,b", every tag. Sizes (c % 4, r): 512 (1 + r % 16);
# 512 (1 + r % 2048); 1 MiB + 512 (r % 8192); 8 MiB + 4096 (r % 4096).
# Fault byte: 0 none; else at the k-th device call (1 + (b >> 2) % 24) of the
# next op, once (b % 4 of 1, 2) or from then on (3).
class Sleep:
    def __init__(self, settings):
        self.b = [settings]
        self.live = 0

    def malloc(self, tag, cls, r, fail=False):  # tag 0 a, 1 b, 2 untagged
        self.b += [(0, 2, 3)[tag], cls] + u16(r) + [1 if fail else 0]
        self.live += 1  # the programs below never allocate in a sleeping tag nor past the device
        return self

    def free(self, pick=0):
        self.b += [4] + ([pick] if self.live else [])
        self.live = max(0, self.live - 1)
        return self

    def sleep(self, tags, offload=None, fault=0):  # tags, offload: 0 a, 1 b, 2 a,b, 3 every tag
        self.b += [6, tags | (4 | offload << 3 if offload is not None else 0), fault]
        return self

    def wake(self, tags, fault=0):
        self.b += [8, tags, fault]
        return self

    def prepare(self, tags, offload, fault=0):
        self.b += [10, tags | offload << 2, fault]
        return self

    def empty_cache(self, fault=0):
        self.b += [11, fault]
        return self

    def bytes(self):
        return bytes(self.b)


def weights_and_cache(s):
    """vLLM's two tags: the weights (a) and the KV cache (b), plus an untagged workspace."""
    return s.malloc(0, 3, 300).malloc(0, 2, 4000).malloc(0, 1, 900).malloc(1, 3, 1200).malloc(1, 2, 50) \
        .malloc(2, 1, 77)


def sleep_seeds():
    out = []
    # sleep(level=1): weights offloaded to the host, KV cache discarded; wake.
    s = weights_and_cache(Sleep(0)).sleep(2, offload=0).wake(2)
    out.append(("vllm_level1", s.malloc(1, 2, 60).bytes()))
    # sleep(level=2): both discarded, the weights reloaded by the caller.
    out.append(("vllm_level2", weights_and_cache(Sleep(0)).sleep(2).empty_cache().wake(2).bytes()))
    # Expandable segments (the setting vLLM pairs with sleep mode), three cycles.
    s = weights_and_cache(Sleep(1))
    for _ in range(3):
        s.sleep(2, offload=0).malloc(2, 3, 500).free(s.live - 1).wake(2)
    out.append(("expandable_cycles", s.bytes()))
    # sleep_prepare (pinned host buffers made ahead), then the sleep itself.
    out.append(("prepare_then_sleep",
                weights_and_cache(Sleep(0)).prepare(2, 0).sleep(2, offload=0).wake(3).bytes()))
    # The device failing while the weights are copied out: the sleep is
    # undone or completed, never half done; then a clean sleep.
    s = weights_and_cache(Sleep(0)).sleep(0, offload=0, fault=1 | 2 << 2).sleep(0, offload=0).wake(0)
    out.append(("fault_during_offload", s.bytes()))
    # ... and while they are copied back, every call from the 3rd on.
    s = weights_and_cache(Sleep(2)).sleep(2, offload=0).wake(2, fault=3 | 2 << 2).wake(2)
    out.append(("fault_during_wake", s.bytes()))
    # A training step (untagged) while the policy sleeps, its cache emptied
    # with a failing release, then the policy wakes.
    s = weights_and_cache(Sleep(0)).sleep(2, offload=0)
    s.malloc(2, 3, 2000).malloc(2, 3, 2100).free(s.live - 1).free(s.live - 1).empty_cache(fault=2 | 1 << 2)
    out.append(("train_while_asleep", s.wake(2).bytes()))
    # Only the cache sleeps; the weights serve another request's allocation.
    s = weights_and_cache(Sleep(1)).sleep(1).malloc(0, 1, 100).wake(1).malloc(1, 2, 70)
    out.append(("cache_only", s.bytes()))
    return out


# ---- snapshot_roundtrip_fuzz: [settings][ring] then ops (op % 8) -------------
# settings: 1 expandable, (s >> 1) % 4 context (0 none, 1 state, 2 alloc, 3 all);
# ring byte g: g % 4 == 0 keeps the last 1 + g / 4 entries, else all.
# Sizes (c % 4, r): 1 + r % 4096; 1 + 16r % 1 MiB; 1 MiB + 1 + 160r % 9 MiB;
# 10 MiB + 800r % 60 MiB. Device 512 MiB; streams 0-2.
class Snap:
    def __init__(self, expandable, context, ring=None):
        self.b = [int(expandable) | context << 1, 1 if ring is None else 4 * (ring - 1)]
        self.live = 0

    def malloc(self, cls, r, stream=0):
        self.b += [0, cls] + u16(r) + [stream]
        self.live += 1
        return self

    def free(self, pick=0, other_stream=False):
        self.b += [5 if other_stream else 3] + ([pick] if self.live else [])
        self.live = max(0, self.live - 1)
        return self

    def empty_cache(self):
        self.b += [6]
        return self

    def annotation(self):
        self.b += [7]
        return self

    def bytes(self):
        return bytes(self.b)


def snap_step(s, step):
    s.annotation()
    for act in (300, 2000, 9000):
        s.malloc(2, act + step)
    s.malloc(0, 4 + step)
    for _ in range(4):
        s.free(s.live - 1)
    return s


def snapshot_seeds():
    out = []
    for name, exp, ctx, ring in (("steps_context_all", 0, 3, None), ("steps_context_state", 0, 1, None),
                                 ("steps_context_none", 0, 0, None), ("steps_expandable_alloc", 1, 2, None),
                                 ("steps_ring_of_40", 0, 3, 40)):
        s = Snap(exp, ctx, ring).malloc(3, 1000).malloc(2, 4000)  # weights
        for step in range(3):
            snap_step(s, step)
        out.append((name, s.bytes()))
    # DDP buckets freed with record_stream: pending at the snapshot.
    s = Snap(0, 3).malloc(3, 100).malloc(3, 200, 1).free(0, other_stream=True).free(0, other_stream=True)
    out.append(("pending_frees_at_snapshot", s.malloc(1, 50).bytes()))
    # empty_cache between phases (evaluation after training): segment_free entries.
    s = Snap(0, 3).malloc(3, 3000).malloc(3, 3100).free(0).free(0).empty_cache().malloc(2, 9).malloc(1, 17, 2)
    out.append(("empty_cache_between_phases", s.bytes()))
    # Small tensors on three streams, expandable, the ring of 9 wrapping.
    s = Snap(1, 3, 9)
    for k in range(12):
        s.malloc(k % 2, 311 * k, k % 3)
    out.append(("small_streams_ring_of_9", s.free(3).free(1).bytes()))
    return out


def first_seeds():
    """The first op seeds, written as raw bytes before the encoders above."""
    out = {"replay_fuzz": [], "sleep_fuzz": [], "snapshot_roundtrip_fuzz": []}
    steps = bytes([0, 2, 0, 0x10, 0, 3, 0, 0, 0, 1, 0x40, 0, 1, 2, 0x10, 0, 0, 8, 0, 1, 6, 1, 7, 0,
                   4, 0, 0, 10, 15, 4, 0, 1, 2, 12, 4, 0xff, 0xff, 0])
    out["replay_fuzz"] += [
        ("training_steps", steps),
        ("fraction_gc_grid", bytes([0, 1, 11, 150, 3, 3, 0x80, 0x20, 0, 2, 3, 0x80, 0x20, 0,
                                    4, 0, 1, 0, 4, 0, 2, 0, 12, 4, 0, 0x10, 0, 10, 11, 210])),
        ("tags_sleep_wake", bytes([3, 0, 14, 0, 0, 0, 1, 0x10, 0, 0, 14, 1, 0, 14, 2, 4 | 0,
                                   1, 2, 0, 0, 0, 14, 3, 0, 4, 0, 1, 10])),
        ("anomalies", bytes([5, 3, 0, 1, 0x10, 0, 0, 13, 1, 7, 13, 0, 0, 4, 0, 2, 4, 0, 0, 9, 2]))]
    a = [0, 0, 0x10, 0, 0, 0, 2, 0x20, 0, 0, 2, 3, 0x10, 0, 0, 3, 1, 0x20, 0, 0]
    out["sleep_fuzz"] += [
        ("offload_a_fault_sleep", bytes([1] + a + [6, 2 | 4 | (0 << 3), 1 << 2 | 1,
                                                   8, 2, 0, 4, 0, 6, 2, 0, 8, 2, 3 | 4 << 2])),
        ("discard_b_fault_wake", bytes([0] + a + [10, 0x0a, 0, 7, 1, 0, 4, 1, 9, 1, 1 | 3 << 2,
                                                  9, 3, 0, 11, 2 | 5 << 2])),
        ("free_while_asleep", bytes([3] + a + [6, 3 | 4 | (3 << 3), 0, 4, 0, 0, 0, 0, 0, 8, 3, 1 | 6 << 2]))]
    ops = [0, 0, 0x10, 0, 1, 1, 0x40, 0, 0, 2, 2, 0, 0x20, 0, 3, 0, 7, 5, 0, 0, 3, 0, 0, 6, 0, 1, 0, 1, 0]
    out["snapshot_roundtrip_fuzz"] += [
        ("context_all", bytes([6, 1] + ops)),
        ("expandable_alloc_ctx", bytes([5, 1] + ops)),
        ("ring_of_5", bytes([0, 16] + ops + ops))]
    return out


def all_seeds():
    """{target: [(name, bytes)]}: every generated seed of these targets (the
    corpus directories also hold hand-written ones: conf_fuzz's and api_fuzz's
    first seeds, replay_fuzz's no_events)."""
    first = first_seeds()
    return {"conf_fuzz": conf_seeds(), "api_fuzz": api_seeds(),
            "replay_fuzz": first["replay_fuzz"] + replay_seeds(),
            "sleep_fuzz": first["sleep_fuzz"] + sleep_seeds(),
            "snapshot_roundtrip_fuzz": first["snapshot_roundtrip_fuzz"] + snapshot_seeds()}
