// conformance.h: the behaviour every device backend must show, as one function
// to call from a backend's test with its registered name.
//
// Only what the ops contract in api/galloc_backend.h promises is checked, with
// figures a real driver also meets (a real device may round a segment up, so
// free memory must drop by at least the bytes allocated, not exactly). Optional
// members (virtual memory, events, pinned host memory and copies) are
// exercised when the backend has them; host memory and copies also when the
// table has them but the library lacks the feature (GALLOC_E_UNSUPPORTED with
// a message): a round trip through pinned memory, into a segment and into a
// mapped range, must give back every byte.
// A backend that cannot open (GALLOC_E_UNAVAILABLE: no driver, no device)
// makes the calling test skip.
#ifndef GA_TESTS_BACKEND_CONFORMANCE_H
#define GA_TESTS_BACKEND_CONFORMANCE_H

extern "C" {
#include <galloc/galloc_backend.h>
}

// Opens backend `name` with args, runs the checks with GoogleTest assertions,
// closes it. Call from a TEST body; failures are reported against that test.
// holds_bytes: the device memory keeps what is written (false for a model
// without contents, as the unbacked sim, whose copies succeed and move
// nothing: the calls and statuses are checked, not the bytes).
void ga_test_backend_conformance(const char *name, const galloc_backend_args_t &args, bool holds_bytes = true);

#endif // GA_TESTS_BACKEND_CONFORMANCE_H
