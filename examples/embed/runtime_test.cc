// runtime_test: rt's allocator vtable with galloc behind it (and the host
// baseline), as a runtime's own test suite would check its memory layer:
// exact figures, OOM as a status with PyTorch's message, streams, errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

extern "C" {
#include "examples/embed/runtime.h"
}

namespace {

std::string LastError(rt_allocator_t *a, int device)
{
    char buf[512] = "";
    a->ops->last_error(a, device, buf, sizeof buf);
    return buf;
}

rt_memory_stats_t Stats(rt_allocator_t *a, int device)
{
    rt_memory_stats_t s = {};
    EXPECT_EQ(a->ops->memory_stats(a, device, &s), RT_OK);
    return s;
}

class Galloc : public ::testing::Test {
  protected:
    void SetUp() override
    {
        char err[512] = "";
        a_ = rt_galloc_allocator_create("sim_backed:True,sim_capacity:256MiB", err, sizeof err);
        ASSERT_NE(a_, nullptr) << err;
    }
    void TearDown() override
    {
        if (a_ != nullptr)
            a_->ops->destroy(a_);
    }
    rt_allocator_t *a_ = nullptr;
};

TEST_F(Galloc, TensorsHavePyTorchsFigures)
{
    rt_tensor_t t, u;
    ASSERT_EQ(rt_tensor_empty(a_, 10, 0, 0, &t), RT_OK) << LastError(a_, 0); // 40 bytes -> 512
    ASSERT_EQ(rt_tensor_empty(a_, 3 << 18, 1, 0, &u), RT_OK);                // 3 MiB -> a 20 MiB segment
    rt_fill(&t, 1.0f, 0.0f);
    EXPECT_DOUBLE_EQ(rt_sum(&t), 10.0); // sim_backed: the memory is real
    rt_memory_stats_t s0 = Stats(a_, 0), s1 = Stats(a_, 1);
    EXPECT_EQ(s0.allocated, 512);
    EXPECT_EQ(s0.reserved, 2 << 20);
    EXPECT_EQ(s1.allocated, 3 << 20);
    EXPECT_EQ(s1.reserved, 20 << 20);
    EXPECT_EQ(s1.device_allocs, 1);
    rt_tensor_release(&t);
    rt_tensor_release(&t); // a released tensor is zeroed: releasing again is a no-op
    rt_tensor_release(&u);
    EXPECT_EQ(Stats(a_, 0).allocated, 0);
    EXPECT_EQ(Stats(a_, 1).reserved, 20 << 20); // cached for the next tensor
    ASSERT_EQ(a_->ops->empty_cache(a_, 1), RT_OK);
    EXPECT_EQ(Stats(a_, 1).reserved, 0);
    EXPECT_EQ(Stats(a_, 1).max_reserved, 20 << 20);
}

TEST_F(Galloc, OutOfMemoryIsAStatusWithPyTorchsMessage)
{
    rt_tensor_t t;
    EXPECT_EQ(rt_tensor_empty(a_, size_t(1) << 27, 0, 0, &t), RT_OOM); // 512 MiB on a 256 MiB device
    EXPECT_EQ(t.data, nullptr);
    EXPECT_EQ(LastError(a_, 0).rfind("CUDA out of memory. Tried to allocate 512.00 MiB", 0), 0u) << LastError(a_, 0);
    ASSERT_EQ(rt_tensor_empty(a_, 1 << 20, 0, 0, &t), RT_OK); // and the device still works
    rt_tensor_release(&t);
}

TEST_F(Galloc, RecordStreamDelaysReuse)
{
    rt_tensor_t t, u;
    ASSERT_EQ(rt_tensor_empty(a_, 1024, 0, 0, &t), RT_OK);
    void *first = t.data;
    ASSERT_EQ(rt_tensor_record_stream(&t, 0), RT_OK); // its own stream: nothing to do
    rt_tensor_release(&t);
    ASSERT_EQ(rt_tensor_empty(a_, 1024, 0, 0, &u), RT_OK);
    EXPECT_EQ(u.data, first); // freed at once: reused
    ASSERT_EQ(rt_tensor_record_stream(&u, 5), RT_OK);
    rt_tensor_release(&u);
    EXPECT_EQ(Stats(a_, 0).allocated, 0);
    // Still in use on stream 5 until its event is seen complete: empty_cache
    // waits for it, then the segment goes back.
    ASSERT_EQ(a_->ops->empty_cache(a_, 0), RT_OK);
    EXPECT_EQ(Stats(a_, 0).reserved, 0);
}

TEST_F(Galloc, ForeignPointersAndBadDevicesAreErrors)
{
    int local = 0;
    EXPECT_EQ(a_->ops->free(a_, &local, 0), RT_ERROR);
    EXPECT_NE(LastError(a_, 0).find("not"), std::string::npos) << LastError(a_, 0);
    void *p = nullptr;
    EXPECT_EQ(a_->ops->alloc(a_, 16, -1, 0, &p), RT_ERROR);
    EXPECT_EQ(a_->ops->alloc(a_, 16, 64, 0, &p), RT_ERROR);
    EXPECT_NE(LastError(a_, 64).find("out of range"), std::string::npos) << LastError(a_, 64);
}

TEST(GallocConfig, ABadStringIsRefusedAtCreate)
{
    char err[512] = "";
    EXPECT_EQ(rt_galloc_allocator_create("max_split_size_mb:lots", err, sizeof err), nullptr);
    EXPECT_NE(std::string(err).find("max_split_size_mb"), std::string::npos) << err;
}

TEST(Host, CountsExactlyWhatIsAsked)
{
    rt_allocator_t *a = rt_host_allocator_create();
    ASSERT_NE(a, nullptr);
    rt_tensor_t t;
    ASSERT_EQ(rt_tensor_empty(a, 10, 1, 0, &t), RT_OK);
    rt_memory_stats_t s = Stats(a, 1);
    EXPECT_EQ(s.allocated, 40);
    EXPECT_EQ(s.reserved, 40);
    rt_tensor_release(&t);
    EXPECT_EQ(Stats(a, 1).allocated, 0);
    EXPECT_EQ(Stats(a, 1).max_allocated, 40);
    void *p = nullptr;
    EXPECT_EQ(a->ops->alloc(a, 16, 99, 0, &p), RT_ERROR);
    EXPECT_EQ(LastError(a, 99), "no device 99");
    a->ops->destroy(a);
}

} // namespace
