// async_registered_test: backend:cudaMallocAsync over a registered backend
// whose stream-ordered calls the test controls (sim's table plus six calls
// of its own): which tables it refuses, and how each driver failure or
// misbehaviour is reported. The driver-level cases (streams, events, the
// fault sweep) are async_cases.cc's, on the fake CUDA and HIP drivers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

// What the test's stream-ordered calls do. Addresses are never touched: the
// async allocator only hands them on.
struct Driver {
    uintptr_t next = 0x7f0000000000;
    bool repeat = false;                     // malloc_async returns the last address again
    galloc_status_t malloc_st = GALLOC_OK;   // malloc_async's status
    galloc_status_t usage_st = GALLOC_OK;    // pool_usage's
    galloc_status_t mem_info_st = GALLOC_OK; // mem_info's
    std::string why;                         // error_string's text
    std::set<uintptr_t> live;
} g;

galloc_status_t MallocAsync(void *, size_t, galloc_stream_t, uintptr_t *addr)
{
    if (g.malloc_st != GALLOC_OK)
        return g.malloc_st;
    if (!g.repeat)
        g.next += 1 << 20;
    *addr = g.next;
    g.live.insert(g.next);
    return GALLOC_OK;
}
galloc_status_t FreeAsync(void *, uintptr_t addr, galloc_stream_t)
{
    g.live.erase(addr);
    return GALLOC_OK;
}
galloc_status_t PoolTrim(void *, size_t)
{
    return GALLOC_OK;
}
galloc_status_t PoolUsage(void *, uint64_t *rc, uint64_t *rh, uint64_t *uc, uint64_t *uh)
{
    for (uint64_t *o : {rc, rh, uc, uh})
        if (o != nullptr)
            *o = 0;
    return g.usage_st;
}
galloc_status_t DeviceSync(void *)
{
    return GALLOC_OK;
}
galloc_status_t StreamSync(void *, galloc_stream_t)
{
    return GALLOC_OK;
}
galloc_status_t MemInfo(void *, size_t *f, size_t *t)
{
    *f = *t = size_t(1) << 30;
    return g.mem_info_st;
}
void ErrorString(void *, char *buf, size_t len)
{
    std::snprintf(buf, len, "%s", g.why.c_str());
}

// Registers (once per process) sim's table with the test's calls, less the
// one named by `missing` ("" for none), under the name "async_<missing>".
const char *Backend(const std::string &missing = "")
{
    static std::set<std::string> made;
    static std::set<std::string> names; // keeps the names' storage
    const std::string name = "async_" + (missing.empty() ? std::string("all") : missing);
    const char *n = names.insert(name).first->c_str();
    if (made.insert(name).second) {
        auto *ops = new galloc_backend_ops_t(*galloc_backend_find("sim")); // lives until the process ends
        ops->name = n;
        ops->malloc_async = missing == "malloc_async" ? nullptr : MallocAsync;
        ops->free_async = missing == "free_async" ? nullptr : FreeAsync;
        ops->pool_trim = missing == "pool_trim" ? nullptr : PoolTrim;
        ops->pool_usage = missing == "pool_usage" ? nullptr : PoolUsage;
        ops->device_synchronize = missing == "device_synchronize" ? nullptr : DeviceSync;
        ops->stream_synchronize = missing == "stream_synchronize" ? nullptr : StreamSync;
        ops->mem_info = MemInfo;
        ops->error_string = ErrorString;
        EXPECT_EQ(galloc_backend_register(ops), GALLOC_OK) << name;
    }
    return n;
}

std::string LastError(galloc_allocator_t *a)
{
    char m[GALLOC_ERROR_MAX] = "";
    galloc_last_error(a, m, sizeof m);
    return m;
}

class AsyncRegistered : public ::testing::Test {
  protected:
    void SetUp() override { g = Driver(); }
    void TearDown() override
    {
        if (a_ != nullptr) {
            EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
            galloc_allocator_destroy(a_);
        }
        EXPECT_TRUE(g.live.empty()) << "destroy frees what is live";
    }
    galloc_status_t Make(const char *backend, std::string *err = nullptr)
    {
        char e[GALLOC_ERROR_MAX] = "";
        galloc_status_t st = galloc_allocator_create(backend, 0, "backend:cudaMallocAsync", &a_, e, sizeof e);
        if (err != nullptr)
            *err = e;
        return st;
    }
    galloc_allocator_t *a_ = nullptr;
};

TEST_F(AsyncRegistered, EachOfTheSixCallsIsRequired)
{
    for (const char *m :
         {"malloc_async", "free_async", "pool_trim", "pool_usage", "device_synchronize", "stream_synchronize"}) {
        std::string err;
        EXPECT_EQ(Make(Backend(m), &err), GALLOC_E_UNAVAILABLE) << m;
        EXPECT_NE(err.find("needs stream-ordered allocation"), std::string::npos) << err;
        EXPECT_NE(err.find(std::string("\"async_") + m + "\""), std::string::npos) << err; // names the backend
    }
    ASSERT_EQ(Make(Backend()), GALLOC_OK);
}

// The pool's first call fails: the driver's words when it has some, the
// status's otherwise.
TEST_F(AsyncRegistered, APoolSetUpFailureSaysWhy)
{
    g.usage_st = GALLOC_E_DEVICE;
    g.why = "CUDA_ERROR_LAUNCH_FAILED";
    std::string err;
    EXPECT_EQ(Make(Backend(), &err), GALLOC_E_DEVICE);
    EXPECT_NE(err.find("setting up the device's memory pool failed: CUDA_ERROR_LAUNCH_FAILED"), std::string::npos)
        << err;
    g.why = "";
    EXPECT_EQ(Make(Backend(), &err), GALLOC_E_DEVICE);
    EXPECT_NE(err.find(std::string("failed: ") + galloc_strerror(GALLOC_E_DEVICE)), std::string::npos) << err;
    g.usage_st = GALLOC_E_UNSUPPORTED;
    g.why = "no memory pools on this device";
    EXPECT_EQ(Make(Backend(), &err), GALLOC_E_UNAVAILABLE);
    EXPECT_NE(err.find("no memory pools on this device"), std::string::npos) << err;
}

TEST_F(AsyncRegistered, DriverFailuresAtMallocKeepTheirKind)
{
    ASSERT_EQ(Make(Backend()), GALLOC_OK);
    void *p = nullptr;
    g.malloc_st = GALLOC_E_UNSUPPORTED; // passed on as it is
    EXPECT_EQ(galloc_malloc(a_, 4096, 0, &p), GALLOC_E_UNSUPPORTED);
    g.malloc_st = GALLOC_E_INVAL; // anything else is a device error
    EXPECT_EQ(galloc_malloc(a_, 4096, 0, &p), GALLOC_E_DEVICE);
    EXPECT_NE(LastError(a_).find("malloc(4096 bytes)"), std::string::npos) << LastError(a_);
    EXPECT_EQ(p, nullptr);
}

// A driver that hands out an address still live is corruption, reported
// without taking the address twice.
TEST_F(AsyncRegistered, ADriverRepeatingALiveAddressIsCorruption)
{
    ASSERT_EQ(Make(Backend()), GALLOC_OK);
    void *p = nullptr, *q = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &p), GALLOC_OK);
    g.repeat = true;
    EXPECT_EQ(galloc_malloc(a_, 4096, 0, &q), GALLOC_E_CORRUPT);
    EXPECT_NE(LastError(a_).find("which is still live"), std::string::npos) << LastError(a_);
    EXPECT_EQ(q, nullptr);
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_); // p's record, counted once
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_E_NOT_OWNED); // and gone once freed
}

// record_stream: the allocation's own stream and a stream already recorded
// add nothing; each other stream is waited for before the free.
TEST_F(AsyncRegistered, RecordStreamKeepsOneUsePerStream)
{
    ASSERT_EQ(Make(Backend()), GALLOC_OK);
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 4096, 5, &p), GALLOC_OK);
    EXPECT_EQ(galloc_record_stream(a_, p, 5), GALLOC_OK);
    EXPECT_EQ(galloc_record_stream(a_, p, 6), GALLOC_OK);
    EXPECT_EQ(galloc_record_stream(a_, p, 7), GALLOC_OK);
    EXPECT_EQ(galloc_record_stream(a_, p, 6), GALLOC_OK);
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_); // one use each for 6 and 7
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
}

TEST_F(AsyncRegistered, FractionAndMemoryInfoReportTheDriversFailure)
{
    ASSERT_EQ(Make(Backend()), GALLOC_OK);
    EXPECT_EQ(galloc_set_memory_fraction(a_, std::nan("")), GALLOC_E_INVAL);
    g.mem_info_st = GALLOC_E_DEVICE;
    g.why = "device lost";
    EXPECT_EQ(galloc_set_memory_fraction(a_, 0.5), GALLOC_E_DEVICE);
    EXPECT_NE(LastError(a_).find("set_memory_fraction: "), std::string::npos) << LastError(a_);
    size_t f = 0, t = 0;
    EXPECT_EQ(galloc_memory_info(a_, &f, &t), GALLOC_E_DEVICE);
    EXPECT_NE(LastError(a_).find("memory_info: "), std::string::npos) << LastError(a_);
    g.mem_info_st = GALLOC_OK;
    EXPECT_EQ(galloc_set_memory_fraction(a_, 0.5), GALLOC_OK);
}

} // namespace
