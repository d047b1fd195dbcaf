// sequences.h: the request-size sequences every hot-path benchmark replays, so
// galloc and the host allocators (glibc, jemalloc, mimalloc, tcmalloc) see
// exactly the same sizes in the same order.
//
// Every sequence is a pure function of its kind and seed (splitmix64), so two
// binaries built separately generate identical sequences. Nothing here
// allocates through galloc: this file is shared with the baseline binaries,
// which must not link galloc.
//
// Thread-safety: the functions only read their arguments.
#ifndef GALLOC_BENCH_SEQUENCES_H
#define GALLOC_BENCH_SEQUENCES_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bench {

// Length of a pair sequence; the benchmark loop cycles through it.
constexpr size_t kSeqLen = 4096;
// The churn keeps this many blocks live per thread and replays this many
// (free one, allocate one) steps before cycling.
constexpr size_t kChurnLive = 1024;
constexpr size_t kChurnLen = 65536;

// The hot-path size sequences.
enum class Seq {
    kFixed4K,     // 4 KiB every time
    kSmallMix,    // small objects: 70% 1 B..512 B, 25% 512 B..64 KiB, 5% 64 KiB..1 MiB
    kTrainingMix, // 512 B..1 GiB, log-uniform, multiples of 512 B (activations to weights)
    kChurn        // random live set: free a random live block, allocate 512 B..16 MiB in its place
};

// The benchmark-name part of a sequence ("fixed_4KiB", "small_mix", ...).
const char *SeqName(Seq s);

// The sizes of a pair sequence (kSeqLen entries). For kChurn, the sizes of
// its allocations.
std::vector<size_t> MakeSizes(Seq s, uint64_t seed);

// One churn step: free the block in slot, allocate size into it.
struct ChurnStep {
    uint32_t slot; // < kChurnLive
    size_t size;   // bytes, >= 1
};

// The churn steps (kChurnLen entries) and the initial sizes of the live set
// (kChurnLive entries).
std::vector<ChurnStep> MakeChurn(uint64_t seed);
std::vector<size_t> MakeChurnInitial(uint64_t seed);

// splitmix64: the generator behind every sequence.
class Rng {
  public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t Next();
    // Uniform in [lo, hi] (inclusive), hi >= lo.
    uint64_t Range(uint64_t lo, uint64_t hi);
    // Log-uniform in [lo, hi], rounded down to a multiple of `align` (at least lo).
    uint64_t LogUniform(uint64_t lo, uint64_t hi, uint64_t align);

  private:
    uint64_t state_;
};

} // namespace bench

#endif // GALLOC_BENCH_SEQUENCES_H
