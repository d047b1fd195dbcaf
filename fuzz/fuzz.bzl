"""fuzz_target: one libFuzzer target and the test of its seeds (fuzz/BUILD)."""

def fuzz_target(name, srcs, deps, testonly = False):
    """A cc_binary built with libFuzzer and ASan+UBSan (clang, --config=fuzz),
    and NAME_seeds, a cc_test that runs its harness on every seed of
    corpus/NAME/.

    The binary is tagged manual: gcc has no -fsanitize=fuzzer, so `bazel build
    //...` and `--config=layering //...` skip it; fuzz/run_long.sh builds it by
    name. testonly: it links test code (tests/reliability:simwatch).

    The test is the harness's sources with seeds_main.cc in libFuzzer's place,
    built as any test is (gcc; clang's ASan and UBSan under --config=asan): every seed
    must pass the harness's checks, and the corpus must hold at least 10 seeds.
    """
    native.cc_binary(
        name = name,
        testonly = testonly,
        srcs = srcs,
        copts = ["-fsanitize=fuzzer-no-link,address,undefined"],
        linkopts = ["-fsanitize=fuzzer,address,undefined"],
        tags = ["manual"],
        deps = deps,
    )
    native.cc_test(
        name = name + "_seeds",
        size = "small",
        srcs = srcs + ["seeds_main.cc"],
        args = [
            "--min=10",
            "fuzz/corpus/" + name,
        ],
        data = native.glob(["corpus/%s/*" % name]),
        deps = deps,
    )
