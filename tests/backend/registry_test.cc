// registry_test: the backend registry (find, register, open by name) and the
// conformance suite run on sim, on backed sim and on a user-registered backend.
#include <gtest/gtest.h>

#include <cstddef>

#include "tests/backend/conformance.h"
#include "tests/backend/sim_fixture.h"

namespace sim_test {
namespace {

// A user backend: sim's table under another name, so the registry's rules are
// exercised on a real table and the conformance suite runs through it.
const galloc_backend_ops_t *SimUnderAnotherName()
{
    static galloc_backend_ops_t ops = [] {
        galloc_backend_ops_t o = ga_backend_sim;
        o.name = "sim_user";
        return o;
    }();
    return &ops;
}

TEST(Registry, FindRegisterAndOpen)
{
    EXPECT_EQ(galloc_backend_find("sim"), &ga_backend_sim);
    EXPECT_EQ(galloc_backend_find("no_such_backend"), nullptr);
    EXPECT_EQ(galloc_backend_find(nullptr), nullptr);

    EXPECT_EQ(galloc_backend_register(&ga_backend_sim), GALLOC_E_CONFIG) << "duplicate name";
    EXPECT_EQ(galloc_backend_register(nullptr), GALLOC_E_INVAL);
    auto invalid = [](void (*edit)(galloc_backend_ops_t *)) {
        galloc_backend_ops_t o = *SimUnderAnotherName();
        o.name = "sim_invalid";
        edit(&o);
        return galloc_backend_register(&o);
    };
    EXPECT_EQ(invalid([](galloc_backend_ops_t *o) { o->version = 2; }), GALLOC_E_INVAL);
    EXPECT_EQ(invalid([](galloc_backend_ops_t *o) { o->struct_size = offsetof(galloc_backend_ops_t, mem_info); }),
              GALLOC_E_INVAL);
    EXPECT_EQ(invalid([](galloc_backend_ops_t *o) { o->segment_free = nullptr; }), GALLOC_E_INVAL);
    EXPECT_EQ(invalid([](galloc_backend_ops_t *o) { o->name = ""; }), GALLOC_E_INVAL);
    EXPECT_EQ(invalid([](galloc_backend_ops_t *o) { o->name = nullptr; }), GALLOC_E_INVAL);
    EXPECT_EQ(invalid([](galloc_backend_ops_t *o) { o->name = "a_name_of_thirty_two_bytes_long_"; }), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_backend_find("sim_invalid"), nullptr);

    if (galloc_backend_find("sim_user") == nullptr) { // registration lasts for the process (--gtest_repeat)
        EXPECT_EQ(galloc_backend_register(SimUnderAnotherName()), GALLOC_OK);
    }
    EXPECT_EQ(galloc_backend_register(SimUnderAnotherName()), GALLOC_E_CONFIG);
    EXPECT_EQ(galloc_backend_find("sim_user"), SimUnderAnotherName());
    Dev d(Args(1 * kGiB), "sim_user");
    EXPECT_EQ(d.b()->ops, SimUnderAnotherName());
    EXPECT_EQ(d.free_bytes(), 1 * kGiB);
}

TEST(Registry, UnknownNameIsUnavailable)
{
    ga_backend_t b = {};
    char err[256] = "";
    galloc_backend_args_t a = Args();
    EXPECT_EQ(ga_backend_open(&b, "no_such_backend", &a, err, sizeof(err)), GALLOC_E_UNAVAILABLE);
    EXPECT_STREQ(err,
                 "unknown device backend \"no_such_backend\" (built in: sim, cuda, hip; others must be registered)");
    EXPECT_EQ(b.ops, nullptr);
    EXPECT_EQ(b.state, nullptr);
}

// Unbacked, the sim's memory holds no bytes: its copies are checked for status only.
TEST(Conformance, Sim)
{
    ga_test_backend_conformance("sim", Args(), false);
}

TEST(Conformance, SimBacked)
{
    ga_test_backend_conformance("sim", Args(256 * kMiB, kBacked));
}

TEST(Conformance, UserRegisteredBackend)
{
    if (galloc_backend_find("sim_user") == nullptr) {
        ASSERT_EQ(galloc_backend_register(SimUnderAnotherName()), GALLOC_OK);
    }
    ga_test_backend_conformance("sim_user", Args(1 * kGiB), false);
}

} // namespace
} // namespace sim_test
