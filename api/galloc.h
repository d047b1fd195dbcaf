/* galloc.h: the whole public API. Each header also compiles on its own. */
#ifndef GALLOC_H
#define GALLOC_H

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_backend.h>
#include <galloc/galloc_device.h>
#include <galloc/galloc_hooks.h>
#include <galloc/galloc_host.h>
#include <galloc/galloc_inspect.h>
#include <galloc/galloc_ipc.h>
#include <galloc/galloc_mempool.h>
#include <galloc/galloc_sleep.h>
#include <galloc/galloc_stats.h>
#include <galloc/galloc_status.h>
#include <galloc/galloc_trace.h>
#include <galloc/galloc_user.h>

#endif /* GALLOC_H */
