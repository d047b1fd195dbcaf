// sleep_backends_test: sleep and wake on devices that lack what they need:
// no virtual memory (a tag cannot be hosted; said at its first allocation)
// and no host memory or copies (nothing can be offloaded; a discarding
// sleep still works). The devices are sim's ops table with members removed.
#include <gtest/gtest.h>

#include <string>

extern "C" {
#include <galloc/galloc.h>
#include "backend/sim.h"
}

namespace {

constexpr uint64_t MiB = 1 << 20;

const galloc_backend_ops_t *Without(const char *name, bool vmm, bool host)
{
    static galloc_backend_ops_t tables[2];
    galloc_backend_ops_t *t = &tables[vmm ? 0 : 1];
    *t = ga_backend_sim;
    t->name = name;
    if (!vmm)
        t->va_reserve = nullptr, t->va_release = nullptr, t->map = nullptr, t->unmap = nullptr,
        t->granularity = nullptr;
    if (!host)
        t->host_alloc = nullptr, t->host_free = nullptr, t->copy_d2h = nullptr, t->copy_h2d = nullptr;
    return t;
}

class SleepBackends : public ::testing::Test {
  protected:
    static void SetUpTestSuite()
    {
        galloc_status_t st = galloc_backend_register(Without("sim_novmm", false, true));
        ASSERT_TRUE(st == GALLOC_OK || st == GALLOC_E_CONFIG);
        st = galloc_backend_register(Without("sim_nohost", true, false));
        ASSERT_TRUE(st == GALLOC_OK || st == GALLOC_E_CONFIG);
    }
    void Make(const char *backend)
    {
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create(backend, 0, "sim_backed:True", &a_, err, sizeof err), GALLOC_OK) << err;
    }
    void TearDown() override
    {
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        galloc_allocator_destroy(a_);
    }
    std::string Err()
    {
        char m[GALLOC_ERROR_MAX];
        galloc_last_error(a_, m, sizeof m);
        return m;
    }
    galloc_allocator_t *a_ = nullptr;
};

TEST_F(SleepBackends, WithoutVirtualMemoryATagCannotAllocate)
{
    Make("sim_novmm");
    ASSERT_EQ(galloc_tag_begin(a_, "w"), GALLOC_OK);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 1 * MiB, 0, &p), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(Err().find("sleep tag needs a device backend with virtual memory"), std::string::npos) << Err();
    EXPECT_NE(Err().find("sim_novmm"), std::string::npos) << Err();
    ASSERT_EQ(galloc_tag_end(a_, "w"), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a_, 1 * MiB, 0, &p), GALLOC_OK) << Err(); // untagged memory is unaffected
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(galloc_sleep(a_, "w", nullptr), GALLOC_OK); // a tag without segments sleeps trivially
    EXPECT_EQ(galloc_wake(a_, "w"), GALLOC_OK);
}

TEST_F(SleepBackends, WithoutHostMemoryNothingIsOffloadedButDiscardingWorks)
{
    Make("sim_nohost");
    ASSERT_EQ(galloc_tag_begin(a_, "kv"), GALLOC_OK);
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 4 * MiB, 0, &p), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_tag_end(a_, "kv"), GALLOC_OK);
    galloc_stats_t st;
    st.struct_size = sizeof st;
    galloc_memory_stats(a_, &st);
    int64_t reserved = st.reserved_bytes[GALLOC_STAT_ALL].current;
    EXPECT_EQ(galloc_sleep(a_, "kv", "kv"), GALLOC_E_UNSUPPORTED); // nothing done
    EXPECT_NE(Err().find("sim_nohost"), std::string::npos) << Err();
    int asleep = -1;
    ASSERT_EQ(galloc_tag_asleep(a_, "kv", &asleep), GALLOC_OK);
    EXPECT_EQ(asleep, 0);
    galloc_memory_stats(a_, &st);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, reserved);
    ASSERT_EQ(galloc_sleep(a_, "kv", ""), GALLOC_OK) << Err();
    galloc_memory_stats(a_, &st);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, 0);
    ASSERT_EQ(galloc_wake(a_, "kv"), GALLOC_OK) << Err();
    galloc_memory_stats(a_, &st);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, reserved);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
}

} // namespace
