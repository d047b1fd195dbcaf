// registered_backend_test: a backend a user registers with
// galloc_backend_register, through the public API only: the vendor its table
// names decides the wording of galloc's messages.
#include <gtest/gtest.h>

#include <cstddef>
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

} // namespace
