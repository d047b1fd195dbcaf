"""fuzz_target: one libFuzzer target (fuzz/BUILD)."""

def fuzz_target(name, srcs, deps, testonly = False):
    """A cc_binary built with libFuzzer and ASan+UBSan (clang, --config=fuzz).

    Tagged manual: gcc has no -fsanitize=fuzzer, so `bazel build //...` and
    `--config=layering //...` skip it; fuzz/run_long.sh builds it by name.
    testonly: it links test code (tests/reliability:simwatch).
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
