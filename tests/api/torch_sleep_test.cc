// torch_sleep_test: the PyTorch shim's sleep and wake entry points
// (galloc_torch_tag_begin/_end, galloc_torch_sleep/_wake,
// galloc_torch_tag_asleep, galloc_torch_sleep_stats in
// torch_plugin/galloc_torch.h),
// called as galloc.torch calls them, on the simulated device in backed mode
// (device_backend:sim,sim_backed:True: the pointers are host memory, so the
// bytes offloaded across a sleep are compared here). The test links the shim's
// code (//torch_plugin) to read the device registry beside it, and loads
// the built libgalloc_torch.so only to check that its version script exports
// the new entry points.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <galloc/galloc.h>
#include <galloc/galloc_torch.h>

namespace {

constexpr size_t MiB = size_t(1) << 20;
const char *const kConf = "device_backend:sim,sim_capacity:1GiB,sim_backed:True";

std::string Runfile(const std::string &rel)
{
    const char *srcdir = std::getenv("TEST_SRCDIR");
    const char *ws = std::getenv("TEST_WORKSPACE");
    return std::string(srcdir ? srcdir : ".") + "/" + (ws ? ws : "galloc") + "/" + rel;
}

std::vector<unsigned char> Pattern(size_t n, unsigned seed)
{
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = (unsigned char)(i * 131 + seed * 17 + (i >> 8));
    return v;
}

int64_t Stat(int device, const char *key)
{
    galloc_stats_t s;
    s.struct_size = sizeof(s);
    EXPECT_EQ(galloc_device_memory_stats(device, &s), GALLOC_OK);
    int64_t v = -1;
    EXPECT_EQ(galloc_stats_lookup(&s, key, &v), GALLOC_OK) << key;
    return v;
}

// One allocation made as PyTorch makes it, inside tag `tag` on device.
void *TaggedMalloc(int device, const char *tag, size_t size)
{
    EXPECT_EQ(galloc_torch_tag_begin(device, tag), GALLOC_OK);
    void *p = galloc_torch_malloc((ssize_t)size, device, nullptr);
    EXPECT_EQ(galloc_torch_tag_end(device, tag), GALLOC_OK);
    return p;
}

std::string LastError(int device, galloc_status_t *st)
{
    char buf[GALLOC_ERROR_MAX] = "";
    *st = galloc_torch_last_error(device, buf, sizeof(buf));
    return buf;
}

class TorchSleep : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(galloc_torch_configure(kConf), GALLOC_OK); }
    void TearDown() override { galloc_torch_shutdown(); }
};

TEST(TorchSleepLibrary, ExportsTheSleepEntryPointsAndHidesGallocs)
{
    std::string path = Runfile("torch_plugin/libgalloc_torch.so");
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    for (const char *name :
         {"galloc_torch_tag_begin", "galloc_torch_tag_end", "galloc_torch_sleep", "galloc_torch_sleep_prepare",
          "galloc_torch_wake", "galloc_torch_tag_asleep", "galloc_torch_sleep_stats"})
        EXPECT_NE(dlsym(h, name), nullptr) << name;
    for (const char *name :
         {"galloc_sleep", "galloc_sleep_prepare", "galloc_wake", "galloc_tag_begin", "galloc_sleep_stats"})
        EXPECT_EQ(dlsym(h, name), nullptr) << name << " is exported";
    dlclose(h);
}

TEST_F(TorchSleep, OffloadedBytesReturnAtTheSameAddresses)
{
    // 3 MiB: a 20 MiB segment of its own tag (PyTorch's kLargeBuffer);
    // 1000 B: a 2 MiB small segment of the other tag.
    void *w = TaggedMalloc(0, "weights", 3 * MiB);
    void *k = TaggedMalloc(0, "kv_cache", 1000);
    ASSERT_NE(w, nullptr);
    ASSERT_NE(k, nullptr);
    std::vector<unsigned char> wd = Pattern(3 * MiB, 1);
    memcpy(w, wd.data(), wd.size());
    memset(k, 0x5a, 1000);
    EXPECT_EQ(Stat(0, "reserved_bytes.all.current"), int64_t(22 * MiB));

    // The reserve: the weights' 3 MiB pinned ahead, then taken by the sleep.
    galloc_sleep_stats_t s;
    ASSERT_EQ(galloc_torch_sleep_prepare(0, nullptr, "weights"), GALLOC_OK);
    ASSERT_EQ(galloc_torch_sleep_stats(0, &s), GALLOC_OK);
    EXPECT_EQ(s.bytes_host_cached, 3 * MiB);
    ASSERT_EQ(galloc_torch_sleep(0, nullptr, "weights"), GALLOC_OK);
    int asleep = -1;
    ASSERT_EQ(galloc_torch_tag_asleep(0, "weights", &asleep), GALLOC_OK);
    EXPECT_EQ(asleep, 1);
    ASSERT_EQ(galloc_torch_tag_asleep(0, "kv_cache", &asleep), GALLOC_OK);
    EXPECT_EQ(asleep, 1);
    EXPECT_EQ(Stat(0, "reserved_bytes.all.current"), 0);
    EXPECT_EQ(Stat(0, "allocated_bytes.all.current"), int64_t(3 * MiB + 1024));
    ASSERT_EQ(galloc_torch_sleep_stats(0, &s), GALLOC_OK);
    EXPECT_EQ(s.bytes_host_cached, 0u);
    EXPECT_EQ(s.tags, 2u);
    EXPECT_EQ(s.tags_asleep, 2u);
    EXPECT_EQ(s.bytes_asleep, 22 * MiB);
    EXPECT_EQ(s.bytes_slept, 22 * MiB);
    EXPECT_EQ(s.num_sleep, 1u);

    ASSERT_EQ(galloc_torch_wake(0, "weights,kv_cache"), GALLOC_OK);
    ASSERT_EQ(galloc_torch_tag_asleep(0, "weights", &asleep), GALLOC_OK);
    EXPECT_EQ(asleep, 0);
    EXPECT_EQ(memcmp(w, wd.data(), wd.size()), 0) << "offloaded bytes changed";
    memset(k, 0x33, 1000); // discarded: undefined bytes, but memory again
    EXPECT_EQ(((unsigned char *)k)[999], 0x33);
    ASSERT_EQ(galloc_torch_sleep_stats(0, &s), GALLOC_OK);
    EXPECT_EQ(s.tags_asleep, 0u);
    EXPECT_EQ(s.bytes_woken, 22 * MiB);
    EXPECT_EQ(s.num_wake, 1u);
    EXPECT_EQ(Stat(0, "reserved_bytes.all.current"), int64_t(22 * MiB));
    galloc_torch_free(w, 3 * MiB, 0, nullptr);
    galloc_torch_free(k, 1000, 0, nullptr);
    EXPECT_EQ(Stat(0, "allocated_bytes.all.current"), 0);
}

TEST_F(TorchSleep, TagsArePerDevice)
{
    ASSERT_EQ(galloc_torch_tag_begin(1, "weights"), GALLOC_OK);
    void *on1 = galloc_torch_malloc(4 * MiB, 1, nullptr);
    void *on0 = galloc_torch_malloc(4 * MiB, 0, nullptr); // device 0 has no tag begun
    ASSERT_EQ(galloc_torch_tag_end(1, "weights"), GALLOC_OK);
    ASSERT_NE(on1, nullptr);
    ASSERT_NE(on0, nullptr);
    memset(on0, 0x44, 4 * MiB);
    ASSERT_EQ(galloc_torch_sleep(1, "weights", nullptr), GALLOC_OK);
    int asleep = -1;
    EXPECT_EQ(galloc_torch_tag_asleep(0, "weights", &asleep), GALLOC_E_INVAL);
    EXPECT_EQ(((unsigned char *)on0)[4 * MiB - 1], 0x44); // device 0's memory stayed
    galloc_sleep_stats_t s0, s1;
    ASSERT_EQ(galloc_torch_sleep_stats(0, &s0), GALLOC_OK);
    ASSERT_EQ(galloc_torch_sleep_stats(1, &s1), GALLOC_OK);
    EXPECT_EQ(s0.tags, 0u);
    EXPECT_EQ(s1.tags_asleep, 1u);
    EXPECT_EQ(Stat(0, "reserved_bytes.all.current"), int64_t(20 * MiB));
    EXPECT_EQ(Stat(1, "reserved_bytes.all.current"), 0);
    ASSERT_EQ(galloc_torch_wake(1, nullptr), GALLOC_OK);
    galloc_torch_free(on1, 4 * MiB, 1, nullptr);
    galloc_torch_free(on0, 4 * MiB, 0, nullptr);
}

TEST_F(TorchSleep, MallocInASleepingTagFailsNamingIt)
{
    void *k = TaggedMalloc(0, "kv_cache", 2 * MiB);
    ASSERT_NE(k, nullptr);
    ASSERT_EQ(galloc_torch_sleep(0, "kv_cache", nullptr), GALLOC_OK);
    ASSERT_EQ(galloc_torch_tag_begin(0, "kv_cache"), GALLOC_OK);
    testing::internal::CaptureStderr(); // the hook's report
    EXPECT_EQ(galloc_torch_malloc(512, 0, nullptr), nullptr);
    std::string err = testing::internal::GetCapturedStderr();
    ASSERT_EQ(galloc_torch_tag_end(0, "kv_cache"), GALLOC_OK);
    EXPECT_NE(err.find("galloc: malloc on device 0"), std::string::npos) << err;
    galloc_status_t st;
    std::string msg = LastError(0, &st);
    EXPECT_EQ(st, GALLOC_E_ASLEEP);
    EXPECT_NE(msg.find("kv_cache"), std::string::npos) << msg;
    void *p = galloc_torch_malloc(512, 0, nullptr); // outside the tag: the default pool
    EXPECT_NE(p, nullptr);
    galloc_torch_free(k, 2 * MiB, 0, nullptr); // freeing a sleeping block is allowed
    ASSERT_EQ(galloc_torch_wake(0, nullptr), GALLOC_OK);
    galloc_torch_free(p, 512, 0, nullptr);
    EXPECT_EQ(Stat(0, "allocated_bytes.all.current"), 0);
}

TEST_F(TorchSleep, RefusedArguments)
{
    EXPECT_EQ(galloc_torch_sleep(0, "no_such_tag", nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_torch_wake(0, "no_such_tag"), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_torch_tag_end(0, "weights"), GALLOC_E_INVAL); // never begun
    EXPECT_EQ(galloc_torch_tag_begin(0, "has space"), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_torch_tag_begin(0, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_torch_sleep_stats(0, nullptr), GALLOC_E_INVAL);
    int asleep;
    EXPECT_EQ(galloc_torch_tag_asleep(0, "weights", nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_torch_tag_asleep(0, "weights", &asleep), GALLOC_E_INVAL); // unknown
    // Device indices out of range: refused before any allocator exists.
    EXPECT_EQ(galloc_torch_sleep(GALLOC_DEVICE_MAX, nullptr, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_torch_tag_begin(-1, "weights"), GALLOC_E_INVAL);
    EXPECT_FALSE(galloc_device_is_initialized(GALLOC_DEVICE_MAX - 1));
}

TEST(TorchSleepNoDriver, EveryEntryPointSaysWhy)
{
    // No device_backend anywhere and no driver: the shim simulates nothing.
    ASSERT_EQ(setenv("GALLOC_CONF", "driver_path:/nonexistent/libcuda.so.1", 1), 0);
    galloc_sleep_stats_t s;
    EXPECT_EQ(galloc_torch_sleep(0, nullptr, nullptr), GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(galloc_torch_wake(0, nullptr), GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(galloc_torch_tag_begin(0, "weights"), GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(galloc_torch_sleep_stats(0, &s), GALLOC_E_UNAVAILABLE);
    galloc_status_t st;
    std::string msg = LastError(0, &st);
    EXPECT_EQ(st, GALLOC_E_UNAVAILABLE);
    EXPECT_NE(msg.find("no GPU driver for PyTorch's memory"), std::string::npos) << msg;
    unsetenv("GALLOC_CONF");
    galloc_torch_shutdown();
}

} // namespace
