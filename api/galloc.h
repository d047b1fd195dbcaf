/* galloc.h: the whole public API. Each header also compiles on its own. */
#ifndef GALLOC_H
#define GALLOC_H

#include "api/galloc_allocator.h"
#include "api/galloc_backend.h"
#include "api/galloc_device.h"
#include "api/galloc_mempool.h"
#include "api/galloc_stats.h"
#include "api/galloc_status.h"
#include "api/galloc_trace.h"
#include "api/galloc_user.h"

#endif /* GALLOC_H */
