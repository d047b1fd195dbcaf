"""cc_static_archive: one static library holding every object a cc_library
needs, and the system link flags that remain (for pkg-config's Libs.private
and CMake's INTERFACE_LINK_LIBRARIES).

Bazel 4.2 has no cc_static_library: each cc_library gets its own archive, so
//front:galloc's libgalloc.a holds the front/ objects only, and a program linked
against it alone misses api/, pool/, backend/, conf/, stats/ and trace/. This rule
walks the CcInfo linking context (every library a linker would see) and merges
their archives into one. Objects are renamed by position while merging, so two
packages may each have, say, util.o.
"""

def _impl(ctx):
    archives = []
    flags = []
    for dep in ctx.attr.deps:
        for li in dep[CcInfo].linking_context.linker_inputs.to_list():
            for lib in li.libraries:
                a = lib.pic_static_library or lib.static_library
                if a != None and a not in archives:
                    archives.append(a)
            for f in li.user_link_flags:
                if f not in flags:
                    flags.append(f)
    out = ctx.actions.declare_file(ctx.attr.out)
    ctx.actions.run_shell(
        inputs = archives,
        outputs = [out],
        arguments = [out.path] + [a.path for a in archives],
        use_default_shell_env = True,
        progress_message = "Merging %d archives into %s" % (len(archives), out.short_path),
        command = """
set -eu
out="$PWD/$1"; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
i=0
for a in "$@"; do
    i=$((i + 1))
    mkdir "$tmp/$i"
    (cd "$tmp/$i" && ar x "$OLDPWD/$a")
    # A member name twice in one archive would be lost to `ar x`: refuse.
    want=$(ar t "$a" | wc -l); got=$(ls "$tmp/$i" | wc -l)
    [ "$want" -eq "$got" ] || { echo "$a: $want members, $got distinct names" >&2; exit 1; }
    for o in "$tmp/$i"/*; do mv "$o" "$tmp/$i-$(basename "$o")"; done
    rmdir "$tmp/$i"
done
rm -f "$out"
ar rcsD "$out" "$tmp"/*.o
""",
    )
    flags_file = ctx.actions.declare_file(ctx.attr.out + ".link_flags")
    ctx.actions.write(flags_file, " ".join(flags) + "\n")
    return [DefaultInfo(files = depset([out, flags_file]), runfiles = ctx.runfiles(files = [out, flags_file]))]

cc_static_archive = rule(
    implementation = _impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "out": attr.string(mandatory = True),
    },
    doc = "Merges the static archives of deps (transitively) into `out`; writes `out`.link_flags.",
)

def _headers_impl(ctx):
    hdrs = []
    for dep in ctx.attr.deps:
        hdrs.extend(dep[CcInfo].compilation_context.direct_public_headers)
    return [DefaultInfo(files = depset(hdrs), runfiles = ctx.runfiles(files = hdrs))]

cc_public_headers = rule(
    implementation = _headers_impl,
    attrs = {"deps": attr.label_list(providers = [CcInfo])},
    doc = "The public headers (hdrs) of deps, as their library declares them: the install copies exactly these.",
)
