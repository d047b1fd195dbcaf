// abi_check.h: ABI identity of two function types, for the tests that check
// galloc's own declarations of a vendor API against the vendor's header
// (cuda_abi_test.cc against cuda.h, hip_abi_test.cc against
// hip_runtime_api.h).
//
// Signatures are compared for ABI identity, not type identity: galloc's
// handles are pointers to its own incomplete structs and its enums its own,
// so a parameter matches if the types are the same, or both are int-sized
// enums/integers where one side is an enum, or both are pointers (same
// constness) to matching types, opaque structs, or structs of equal size,
// or structs of equal size passed by value (each test asserts those layouts
// member by member, with the macros at the end of this file).
#ifndef GA_TESTS_BACKEND_ABI_CHECK_H
#define GA_TESTS_BACKEND_ABI_CHECK_H

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ga_abi {

template <class T, class = void> struct is_complete : std::false_type {};
template <class T> struct is_complete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

template <class A, class B> constexpr bool abi_eq();

template <class A, class B> constexpr bool pointee_eq()
{
    if constexpr (std::is_const_v<A> != std::is_const_v<B>) {
        return false;
    } else {
        using CA = std::remove_cv_t<A>;
        using CB = std::remove_cv_t<B>;
        if constexpr (std::is_class_v<CA> && std::is_class_v<CB>) {
            if constexpr (!is_complete<CA>::value && !is_complete<CB>::value)
                return true; // opaque handles
            else if constexpr (is_complete<CA>::value && is_complete<CB>::value)
                return sizeof(CA) == sizeof(CB) && alignof(CA) == alignof(CB);
            else
                return false;
        } else {
            return abi_eq<CA, CB>();
        }
    }
}

template <class A, class B> constexpr bool abi_eq()
{
    if constexpr (std::is_same_v<A, B>) {
        return true;
    } else if constexpr ((std::is_integral_v<A> || std::is_enum_v<A>)&&(std::is_integral_v<B> || std::is_enum_v<B>)) {
        return (std::is_enum_v<A> || std::is_enum_v<B>)&&sizeof(A) == sizeof(B);
    } else if constexpr (std::is_pointer_v<A> && std::is_pointer_v<B>) {
        return pointee_eq<std::remove_pointer_t<A>, std::remove_pointer_t<B>>();
    } else if constexpr (std::is_class_v<A> && std::is_class_v<B>) {
        return sizeof(A) == sizeof(B) && alignof(A) == alignof(B); // by value (IPC handles): layouts asserted apart
    } else {
        return false;
    }
}

template <class F> struct sig;
template <class R, class... A> struct sig<R(A...)> {
    using ret = R;
    using args = std::tuple<A...>;
    static constexpr size_t n = sizeof...(A);
};

template <class TA, class TB, size_t... I> constexpr bool args_eq(std::index_sequence<I...>)
{
    return (abi_eq<std::tuple_element_t<I, TA>, std::tuple_element_t<I, TB>>() && ...);
}

template <class F, class G> constexpr bool same_abi()
{
    using a = sig<F>;
    using b = sig<G>;
    if constexpr (a::n != b::n)
        return false;
    else
        return abi_eq<typename a::ret, typename b::ret>() &&
               args_eq<typename a::args, typename b::args>(std::make_index_sequence<a::n>{});
}

// The trait itself must tell mismatches apart.
struct opaque_a;
struct opaque_b;
enum small_enum : char { SMALL_ZERO };
static_assert(same_abi<int(opaque_a *, unsigned long long), int(opaque_b *, unsigned long long)>());
static_assert(!same_abi<int(int), int(long)>(), "plain integers must match exactly");
static_assert(!same_abi<int(int *), int(const int *)>(), "constness counts");
static_assert(!same_abi<int(small_enum), int(int)>(), "an enum must be int-sized");
static_assert(!same_abi<int(int, int), int(int)>(), "arity counts");
static_assert(!same_abi<int(opaque_a *), int(int *)>());

} // namespace ga_abi

// The value and layout checks, written once for every vendor header checked:
// an enum value or macro of galloc's equal to the vendor's; a struct of
// galloc's the vendor's size and alignment; one member at the vendor's offset
// with the vendor's size (om and tm may name nested members: a.b).
#define GA_ABI_VALUE(ours, theirs) static_assert((long long)(ours) == (long long)(theirs), #ours " != " #theirs);
#define GA_ABI_LAYOUT(ours, theirs)                                                                                    \
    static_assert(sizeof(ours) == sizeof(theirs) && alignof(ours) == alignof(theirs), #ours " size");
#define GA_ABI_MEMBER(ours, om, theirs, tm)                                                                            \
    static_assert(offsetof(ours, om) == offsetof(theirs, tm) &&                                                        \
                      sizeof(((ours *)nullptr)->om) == sizeof(((theirs *)nullptr)->tm),                                \
                  #ours "." #om " != " #theirs "." #tm);

#endif // GA_TESTS_BACKEND_ABI_CHECK_H
