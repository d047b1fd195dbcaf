#!/usr/bin/env bash
# install.sh PREFIX: install galloc's C library under PREFIX:
#   lib/libgalloc.so, lib/libgalloc.a, include/galloc/*.h,
#   lib/pkgconfig/galloc.pc, lib/cmake/galloc/gallocConfig{,Version}.cmake
# Run it through Bazel, which builds what it copies:
#   ./bazelw run --config=opt //:install -- PREFIX
# A relative PREFIX is taken from the directory Bazel was started in.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: ./bazelw run --config=opt //:install -- PREFIX" >&2
    exit 2
fi
prefix="$1"
case "$prefix" in
/*) ;;
*) prefix="${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix" ;;
esac

# The built files, from this script's runfiles.
here="${RUNFILES_DIR:-$0.runfiles}/galloc"
[ -d "$here" ] || here="$PWD"
for f in VERSION libgalloc.so libgalloc.a libgalloc.a.link_flags galloc.pc.in gallocConfig.cmake.in \
    gallocConfigVersion.cmake.in; do
    [ -f "$here/packaging/$f" ] || { echo "install.sh: missing packaging/$f (run it as ./bazelw run --config=opt //:install)" >&2; exit 1; }
done
src() { printf '%s\n' "$here/$1"; } # src PATH: a runfile, checked above

version=$(tr -d '[:space:]' <"$(src packaging/VERSION)")
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
flags=$(cat "$(src packaging/libgalloc.a.link_flags)")
# CMake takes the same flags as a list.
link_libs=$(printf '%s' "$flags" | tr -s ' ' ';' | sed 's/;$//')

fill() { # fill TEMPLATE OUT
    sed -e "s|@VERSION@|$version|g" -e "s|@VERSION_MAJOR@|$major|g" -e "s|@VERSION_MINOR@|$minor|g" \
        -e "s|@LIBS_PRIVATE@|$flags|g" -e "s|@LINK_LIBS@|$link_libs|g" "$(src "packaging/$1")" >"$2"
    chmod 644 "$2"
}

mkdir -p "$prefix/lib/pkgconfig" "$prefix/lib/cmake/galloc" "$prefix/include/galloc"
install -m 755 "$(src packaging/libgalloc.so)" "$prefix/lib/libgalloc.so"
install -m 644 "$(src packaging/libgalloc.a)" "$prefix/lib/libgalloc.a"
n=0
for h in "$here"/api/_virtual_includes/headers/galloc/*.h; do
    install -m 644 "$h" "$prefix/include/galloc/"
    n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "install.sh: no public headers in the runfiles" >&2; exit 1; }
fill galloc.pc.in "$prefix/lib/pkgconfig/galloc.pc"
fill gallocConfig.cmake.in "$prefix/lib/cmake/galloc/gallocConfig.cmake"
fill gallocConfigVersion.cmake.in "$prefix/lib/cmake/galloc/gallocConfigVersion.cmake"
echo "galloc $version installed in $prefix ($n headers; static link needs: $flags)"
