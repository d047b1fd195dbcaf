// registered_backend_test: backends through the public API only: the options
// a config string hands a backend (a registered one included) and how a
// refused one is reported, and the vendor a table names, which decides the
// wording of galloc's messages.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr size_t GiB = size_t(1) << 30;

// The sim backend's table under another name, with another vendor: a user's
// backend whose memory is simulated. Registration lasts for the process, so a
// second run (--gtest_repeat) finds it there.
const galloc_backend_ops_t *SimAs(const char *name, uint32_t vendor)
{
    if (const galloc_backend_ops_t *ops = galloc_backend_find(name))
        return ops;
    auto *ops = new galloc_backend_ops_t(*galloc_backend_find("sim")); // lives until the process ends
    ops->name = name;
    ops->vendor = vendor;
    EXPECT_EQ(galloc_backend_register(ops), GALLOC_OK);
    return ops;
}

std::string OomMessage(const char *backend)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(backend, 0, "sim_capacity:64MiB", &a, err, sizeof err), GALLOC_OK) << err;
    if (a == nullptr)
        return err;
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a, GiB, 0, &p), GALLOC_E_OOM);
    galloc_last_error(a, err, sizeof err);
    galloc_allocator_destroy(a);
    return err;
}

// A user's backend that records the options it is given and takes one key of
// its own, probe_mode:fast|slow; sim's table does the rest.
std::string g_seen;
galloc_status_t ProbeOpen(const galloc_backend_args_t *args, void **state, char *err, size_t errlen)
{
    g_seen = args->options != nullptr ? args->options : "(null)";
    const char *mode = strstr(g_seen.c_str(), "probe_mode:");
    if (mode != nullptr && strncmp(mode + 11, "slow", 4) != 0 && strncmp(mode + 11, "fast", 4) != 0) {
        snprintf(err, errlen, "probe_mode: expected fast or slow (offset %zu)", size_t(mode - g_seen.c_str()) + 11);
        return GALLOC_E_CONFIG;
    }
    galloc_backend_args_t sim = *args;
    sim.options = "sim_capacity:1GiB";
    return galloc_backend_find("sim")->open(&sim, state, err, errlen);
}

const char *Probe()
{
    if (galloc_backend_find("probe") == nullptr) {
        auto *ops = new galloc_backend_ops_t(*galloc_backend_find("sim"));
        ops->name = "probe";
        ops->open = ProbeOpen;
        EXPECT_EQ(galloc_backend_register(ops), GALLOC_OK);
    }
    return "probe";
}

struct Created {
    galloc_status_t st;
    std::string err;
};

Created Create(const char *backend, const char *conf)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    galloc_status_t st = galloc_allocator_create(backend, 0, conf, &a, err, sizeof err);
    galloc_allocator_destroy(a);
    return {st, err};
}

TEST(BackendOptions, AnOptionReachesARegisteredBackend)
{
    ASSERT_EQ(setenv("GALLOC_CONF", "probe_rank:3,expandable_segments:True", 1), 0);
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    galloc_status_t st = galloc_allocator_create(Probe(), 0, "max_split_size_mb:64, probe_mode : fast,probe_rank:7", &a,
                                                 err, sizeof err);
    unsetenv("GALLOC_CONF");
    ASSERT_EQ(st, GALLOC_OK) << err;
    // Only the keys no allocator key claims, as written; the create string's probe_rank replaces GALLOC_CONF's.
    EXPECT_EQ(g_seen, "probe_mode : fast,probe_rank:7");
    galloc_settings_t set;
    set.struct_size = sizeof set;
    ASSERT_EQ(galloc_settings_get(a, &set), GALLOC_OK);
    EXPECT_STREQ(set.backend_options, "probe_mode:fast,probe_rank:7");
    EXPECT_TRUE(set.expandable_segments);
    char s[1024];
    ASSERT_EQ(galloc_settings_string(a, s, sizeof s, nullptr), GALLOC_OK);
    EXPECT_STREQ(s, "max_split_size_mb:64,expandable_segments:True,probe_mode:fast,probe_rank:7");
    galloc_allocator_destroy(a);
    // The settings string, parsed again, hands the backend the same options.
    ASSERT_EQ(galloc_allocator_create(Probe(), 0, s, &a, err, sizeof err), GALLOC_OK) << err;
    EXPECT_EQ(g_seen, "probe_mode:fast,probe_rank:7");
    galloc_allocator_destroy(a);
    // Without options the backend gets "".
    ASSERT_EQ(Create(Probe(), "max_split_size_mb:64").st, GALLOC_OK);
    EXPECT_EQ(g_seen, "");
}

TEST(BackendOptions, ARegisteredBackendsRefusalPointsIntoTheUsersString)
{
    Created c = Create(Probe(), "probe_rank:1,garbage_collection_threshold:0.5, probe_mode:medium");
    EXPECT_EQ(c.st, GALLOC_E_CONFIG);
    EXPECT_EQ(c.err, "create string: probe_mode: expected fast or slow (offset 58)");
}

// sim refuses a key it does not take, and a bad value, in PyTorch's words;
// the offset points into the string the key was written in, which is named.
TEST(BackendOptions, AnUnknownOptionIsRefused)
{
    const struct {
        const char *conf, *galloc_conf, *msg;
    } cases[] = {
        {"expandable_segments:True,foo:1", nullptr,
         "create string: Unrecognized key 'foo' in CUDA allocator config (offset 25)"},
        {"Max_split_size_mb:512", nullptr,
         "create string: Unrecognized key 'Max_split_size_mb' in CUDA allocator config (offset 0)"},
        {"sim_capacity:1GiB", "max_split_size_mb:64,x",
         "GALLOC_CONF: Unrecognized key 'x' in CUDA allocator config (offset 21)"},
        {"sim_backed:1", nullptr, "create string: sim_backed: expected True or False, got \"1\" (offset 11)"},
        {"max_split_size_mb:64,sim_capacity", nullptr,
         "create string: sim_capacity: expected ':' after the key, got the end of the string (offset 33)"},
        {"sim_capacity:1GiB", "sim_fail_nth:-1",
         "GALLOC_CONF: sim_fail_nth: expected a whole number (0 = off), got \"-1\" (offset 13)"},
        {"driver_path:/lib/libcuda.so.1", nullptr, // the GPU backends' key, not sim's
         "create string: Unrecognized key 'driver_path' in CUDA allocator config (offset 0)"},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.conf);
        if (k.galloc_conf != nullptr) {
            ASSERT_EQ(setenv("GALLOC_CONF", k.galloc_conf, 1), 0);
        }
        Created c = Create("sim", k.conf);
        unsetenv("GALLOC_CONF");
        EXPECT_EQ(c.st, GALLOC_E_CONFIG);
        EXPECT_EQ(c.err, k.msg);
    }
    ASSERT_EQ(setenv("PYTORCH_CUDA_ALLOC_CONF", "x", 1), 0);
    Created c = Create("sim", nullptr);
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    EXPECT_EQ(c.st, GALLOC_E_CONFIG);
    EXPECT_EQ(c.err, "PYTORCH_CUDA_ALLOC_CONF: Unrecognized key 'x' in CUDA allocator config (offset 0)");
}

TEST(RegisteredBackend, VendorFromTheOpsTableWordsTheMessages)
{
    EXPECT_EQ(galloc_backend_find("sim")->vendor, uint32_t(GALLOC_BACKEND_VENDOR_NONE));
    EXPECT_EQ(galloc_backend_find("cuda")->vendor, uint32_t(GALLOC_BACKEND_VENDOR_CUDA));
    EXPECT_EQ(galloc_backend_find("hip")->vendor, uint32_t(GALLOC_BACKEND_VENDOR_HIP));

    SimAs("amd_like", GALLOC_BACKEND_VENDOR_HIP);
    SimAs("nv_like", GALLOC_BACKEND_VENDOR_CUDA);
    const std::string oom = "out of memory. Tried to allocate 1024.00 MiB. GPU 0 has a total capacity of 64.00 MiB";
    EXPECT_EQ(OomMessage("amd_like").rfind("HIP " + oom, 0), 0u) << OomMessage("amd_like");
    EXPECT_NE(OomMessage("amd_like").find("PYTORCH_HIP_ALLOC_CONF=expandable_segments:True"), std::string::npos);
    EXPECT_EQ(OomMessage("nv_like").rfind("CUDA " + oom, 0), 0u) << OomMessage("nv_like");
    EXPECT_EQ(OomMessage("sim").rfind("CUDA " + oom, 0), 0u) << OomMessage("sim"); // no vendor: CUDA's wording

    // The stream-ordered allocator is named in the vendor's spelling too.
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create("amd_like", 0, "backend:cudaMallocAsync", &a, err, sizeof err),
              GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(std::string(err).rfind("backend:hipMallocAsync is not available on device backend \"amd_like\"", 0), 0u)
        << err;
}

TEST(RegisteredBackend, VendorIsReadOnlyWhereStructSizeCoversIt)
{
    galloc_backend_ops_t bad = *galloc_backend_find("sim");
    bad.name = "bad_vendor";
    bad.vendor = 3; // no such vendor
    EXPECT_EQ(galloc_backend_register(&bad), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_backend_find("bad_vendor"), nullptr);

    // An older table ends before vendor: whatever lies there is not read.
    if (galloc_backend_find("old_table") == nullptr) {
        auto *old = new galloc_backend_ops_t(*galloc_backend_find("sim"));
        old->name = "old_table";
        old->struct_size = offsetof(galloc_backend_ops_t, vendor);
        old->vendor = 99;
        ASSERT_EQ(galloc_backend_register(old), GALLOC_OK);
    }
    EXPECT_EQ(OomMessage("old_table").rfind("CUDA out of memory.", 0), 0u) << OomMessage("old_table");
}

// galloc_sim_place is the backend's optional place op: sim's under
// sim_placement:recorded, a registered table's where it sets one, and
// GALLOC_E_UNSUPPORTED where the table has none or ends before the member.
uint64_t g_placed;
int g_place_calls;
galloc_status_t RecordPlace(void *, uintptr_t addr)
{
    g_placed = addr;
    g_place_calls++;
    return GALLOC_OK;
}

const char *SimWithPlace(const char *name, galloc_status_t (*place)(void *, uintptr_t), uint32_t struct_size)
{
    if (galloc_backend_find(name) == nullptr) {
        auto *ops = new galloc_backend_ops_t(*galloc_backend_find("sim")); // lives until the process ends
        ops->name = name;
        ops->place = place;
        ops->struct_size = struct_size;
        EXPECT_EQ(galloc_backend_register(ops), GALLOC_OK);
    }
    return name;
}

galloc_status_t PlaceOn(const char *backend, const char *conf, uint64_t addr)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create_ex(backend, 0, conf, GALLOC_CREATE_NO_ENV, &a, err, sizeof err), GALLOC_OK)
        << err;
    if (a == nullptr)
        return GALLOC_E_INVAL;
    galloc_status_t st = galloc_sim_place(a, addr);
    galloc_allocator_destroy(a);
    return st;
}

TEST(RegisteredBackend, SimPlaceCallsTheBackendsPlaceOp)
{
    EXPECT_EQ(PlaceOn("sim", "sim_placement:recorded", 0x7f3a52000000), GALLOC_OK);
    EXPECT_EQ(PlaceOn("sim", "sim_placement:descending", 0x7f3a52000000), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_sim_place(nullptr, 0), GALLOC_E_INVAL);

    g_place_calls = 0;
    const char *own = SimWithPlace("own_place", RecordPlace, sizeof(galloc_backend_ops_t));
    EXPECT_EQ(PlaceOn(own, "", 0x600000), GALLOC_OK);
    EXPECT_EQ(g_place_calls, 1);
    EXPECT_EQ(g_placed, 0x600000u);

    const char *none = SimWithPlace("no_place", nullptr, sizeof(galloc_backend_ops_t));
    EXPECT_EQ(PlaceOn(none, "sim_placement:recorded", 0x600000), GALLOC_E_UNSUPPORTED);

    // An older table ends before place: whatever lies there is not called.
    const char *old = SimWithPlace("old_place", RecordPlace, offsetof(galloc_backend_ops_t, place));
    EXPECT_EQ(PlaceOn(old, "", 0x800000), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(g_place_calls, 1);
}

} // namespace
