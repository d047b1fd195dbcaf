// sequences.cc: the size sequences of sequences.h. The mixes are chosen to
// cover what the caching allocator sees: fixed-size reuse (its best case),
// many small tensors (the small pool), training-scale sizes up to 1 GiB (the
// large pool, where a cached block is split and merged back), and a random live
// set, where blocks are freed in an order unrelated to their allocation.
#include "bench/sequences.h"

#include <cmath>

namespace bench {

uint64_t Rng::Next()
{
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t Rng::Range(uint64_t lo, uint64_t hi)
{
    return lo + Next() % (hi - lo + 1);
}

uint64_t Rng::LogUniform(uint64_t lo, uint64_t hi, uint64_t align)
{
    // 53 random bits give a uniform double in [0, 1).
    double u = static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0);
    double l = std::log2(static_cast<double>(lo)), h = std::log2(static_cast<double>(hi));
    uint64_t v = static_cast<uint64_t>(std::exp2(l + u * (h - l)));
    v -= v % align;
    return v < lo ? lo : (v > hi ? hi : v);
}

const char *SeqName(Seq s)
{
    switch (s) {
    case Seq::kFixed4K: return "fixed_4KiB";
    case Seq::kSmallMix: return "small_mix";
    case Seq::kTrainingMix: return "training_mix";
    case Seq::kChurn: return "churn";
    }
    return "?";
}

static size_t SmallMixSize(Rng &r)
{
    uint64_t pick = r.Range(0, 99);
    if (pick < 70)
        return r.Range(1, 512);
    if (pick < 95)
        return r.LogUniform(512, 64 << 10, 1);
    return r.LogUniform(64 << 10, 1 << 20, 1);
}

static size_t ChurnSize(Rng &r)
{
    return r.LogUniform(512, 16 << 20, 512);
}

std::vector<size_t> MakeSizes(Seq s, uint64_t seed)
{
    Rng r(seed * 4 + static_cast<uint64_t>(s));
    std::vector<size_t> v(kSeqLen);
    for (size_t &x : v) {
        switch (s) {
        case Seq::kFixed4K: x = 4096; break;
        case Seq::kSmallMix: x = SmallMixSize(r); break;
        case Seq::kTrainingMix: x = r.LogUniform(512, size_t{1} << 30, 512); break;
        case Seq::kChurn: x = ChurnSize(r); break;
        }
    }
    return v;
}

std::vector<ChurnStep> MakeChurn(uint64_t seed)
{
    Rng r(seed * 4 + 1000);
    std::vector<ChurnStep> v(kChurnLen);
    for (ChurnStep &c : v) {
        c.slot = static_cast<uint32_t>(r.Range(0, kChurnLive - 1));
        c.size = ChurnSize(r);
    }
    return v;
}

std::vector<size_t> MakeChurnInitial(uint64_t seed)
{
    Rng r(seed * 4 + 2000);
    std::vector<size_t> v(kChurnLive);
    for (size_t &x : v)
        x = ChurnSize(r);
    return v;
}

} // namespace bench
