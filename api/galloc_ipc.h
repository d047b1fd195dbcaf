/*
 * galloc_ipc.h: sharing an allocated block with another process (PyTorch's
 * shareIpcHandle / getIpcDevPtr in c10/cuda/CUDACachingAllocator.cpp and the
 * reference counting of torch/csrc/CudaIPCTypes.cpp), for the caching
 * allocator on a GPU backend.
 *
 * The producer exports a block it allocated: galloc_ipc_export fills a
 * fixed-size handle. The block's memory then reaches the consumer by one of
 * two paths:
 *   - a plain segment (cuMemAlloc) travels as bytes: the handle holds the
 *     driver's IPC handle of the segment and the block's offset in it, so it
 *     may cross any channel (a pipe, a file, a message queue), and the
 *     consumer calls galloc_ipc_open;
 *   - memory mapped page by page (expandable segments and sleep tags) has no
 *     driver handle: each page's physical memory is a POSIX file descriptor
 *     (cuMemExportToShareableHandle), which only a Unix socket can carry
 *     (SCM_RIGHTS). galloc_ipc_send sends the handle and its descriptors on a
 *     connected AF_UNIX socket, galloc_ipc_recv receives and opens them.
 *     PyTorch fetches the descriptors with pidfd_getfd instead, which needs
 *     ptrace permission over the producer (refused under Yama's default
 *     ptrace_scope 1 to a child reading its parent, and by Docker's default
 *     seccomp profile); a socket needs none. send and recv work for plain
 *     segments too.
 * The consumer gets the block's address in its own address space (a mapping
 * of the same device memory), uses it, and calls galloc_ipc_close.
 *
 * Only a process that was handed the handle can open it: the handle carries
 * a random 64-bit cookie that the producer's lease records; a handle opens
 * once (a second open is refused), and memory mapped page by page is
 * reachable only through the descriptors sent on the socket.
 *
 * Nothing is freed under a reader. Each export takes a slot in the
 * producer's lease file (a memfd); the reader that opens it holds an
 * open-file-description lock on its slot until it closes. A block the
 * producer frees while exported stays allocated, counted in the producer's
 * stats as PyTorch counts a sent block that waits in its limbo, and is not
 * reused or given back to the driver, until its export ends: the reader
 * closed it, or the reader died (the kernel drops a dead process's locks,
 * so a killed reader releases the block; PyTorch's counter pins it until the
 * producer exits), or the producer revoked an export that was never opened.
 * galloc collects ended exports on every free of a shared block, on
 * galloc_ipc_collect, and before a malloc asks the device for memory. The
 * consumer's mapping is not counted in the consumer's stats (PyTorch's
 * cudaIpcOpenMemHandle bypasses the caching allocator too).
 *
 * Limits: the producer must outlive its readers (destroying the allocator
 * frees the memory, as exiting does in PyTorch); a tag holding a shared block
 * does not sleep; only the native caching allocator shares (PyTorch's
 * cudaMallocAsync and pluggable allocators refuse too).
 *
 * Every call takes the allocator's lock. Failures leave both processes as
 * they were, with a message in galloc_last_error.
 */
#ifndef GALLOC_IPC_H
#define GALLOC_IPC_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GALLOC_IPC_HANDLE_BYTES 160

/* An exported block: plain bytes, copied and sent as they are. */
typedef struct galloc_ipc_handle {
    unsigned char bytes[GALLOC_IPC_HANDLE_BYTES];
} galloc_ipc_handle_t;

/* How the block's memory travels. */
typedef enum galloc_ipc_kind {
    GALLOC_IPC_PLAIN = 1, /* a plain segment: the driver's IPC handle, in the bytes */
    GALLOC_IPC_PAGES = 2  /* pages of physical memory: descriptors, on a Unix socket only */
} galloc_ipc_kind_t;

/* What a handle says (galloc_ipc_info). */
typedef struct galloc_ipc_info {
    galloc_ipc_kind_t kind;
    int device;    /* the producer's device index */
    int pid;       /* the producer's process id */
    size_t size;   /* the block's requested bytes */
    size_t offset; /* the block's offset in the shared range */
    size_t range;  /* bytes the consumer maps: the segment, or the pages the block spans */
    size_t pages;  /* GALLOC_IPC_PAGES: descriptors that travel with the handle */
} galloc_ipc_info_t;

/*
 * galloc_ipc_export: a handle for the block allocated at ptr (its start).
 * Each export is one reader's: a second reader needs a second export.
 * Returns GALLOC_OK; GALLOC_E_INVAL for NULL arguments; GALLOC_E_NOT_OWNED
 * when ptr is not the start of a live block of a; GALLOC_E_UNSUPPORTED for an
 * allocator or backend that cannot share (message says which);
 * GALLOC_E_DEVICE when the driver refuses; GALLOC_E_NOMEM, GALLOC_E_IO for
 * the lease file.
 */
GALLOC_API galloc_status_t galloc_ipc_export(galloc_allocator_t *a, const void *ptr, galloc_ipc_handle_t *handle);

/* galloc_ipc_info: decode a handle. GALLOC_E_FORMAT for bytes that are not a
 * handle of this galloc version. */
GALLOC_API galloc_status_t galloc_ipc_info(const galloc_ipc_handle_t *handle, galloc_ipc_info_t *info);

/*
 * galloc_ipc_send: send an export of a's (handle from galloc_ipc_export in
 * this process) on sock, a connected AF_UNIX stream socket, with its
 * descriptors. Blocks until sent. GALLOC_E_INVAL for a handle that is not a
 * live export of a; GALLOC_E_IO when the socket fails (errno's text in the
 * message); GALLOC_E_DEVICE when a page's export fails.
 */
GALLOC_API galloc_status_t galloc_ipc_send(galloc_allocator_t *a, int sock, const galloc_ipc_handle_t *handle);

/*
 * galloc_ipc_recv: receive one handle from sock (what galloc_ipc_send sent)
 * and open it in a: *ptr is the block's address here; handle (may be NULL)
 * receives the handle. Blocks until a handle arrives. GALLOC_E_IO when the
 * socket fails or closes; otherwise as galloc_ipc_open. Descriptors received
 * are closed whatever happens.
 */
GALLOC_API galloc_status_t galloc_ipc_recv(galloc_allocator_t *a, int sock, galloc_ipc_handle_t *handle, void **ptr);

/*
 * galloc_ipc_open: open a GALLOC_IPC_PLAIN handle another process exported:
 * *ptr is the block's address in this process. GALLOC_E_FORMAT for bytes
 * that are not a handle; GALLOC_E_UNSUPPORTED for a GALLOC_IPC_PAGES handle
 * (its descriptors come only with galloc_ipc_recv); GALLOC_E_INVAL for a
 * handle of this process, one already opened, revoked or ended, or whose
 * producer is gone; GALLOC_E_DEVICE when the driver refuses. A failed open
 * can be tried again.
 */
GALLOC_API galloc_status_t galloc_ipc_open(galloc_allocator_t *a, const galloc_ipc_handle_t *handle, void **ptr);

/*
 * galloc_ipc_close: close what galloc_ipc_open or galloc_ipc_recv opened at
 * ptr; the producer may then reuse the block. GALLOC_E_NOT_OWNED for a ptr
 * that is not an open block; GALLOC_E_DEVICE when the driver refuses (the
 * block stays open: try again).
 */
GALLOC_API galloc_status_t galloc_ipc_close(galloc_allocator_t *a, void *ptr);

/*
 * galloc_ipc_revoke: end an export of a's that no reader has opened, so that
 * the block (if freed) can be reused. GALLOC_E_INVAL when it is not a live
 * export of a, or a reader has opened it (it ends when that reader closes or
 * dies).
 */
GALLOC_API galloc_status_t galloc_ipc_revoke(galloc_allocator_t *a, const galloc_ipc_handle_t *handle);

/*
 * galloc_ipc_collect: end the exports whose readers closed or died, and free
 * the blocks among them that the producer freed (torch.cuda.ipc_collect).
 * *blocks_freed (may be NULL): how many. Always GALLOC_OK on a live
 * allocator.
 */
GALLOC_API galloc_status_t galloc_ipc_collect(galloc_allocator_t *a, size_t *blocks_freed);

/* The counts of an allocator's sharing (galloc_ipc_stats). */
typedef struct galloc_ipc_stats {
    size_t exports;      /* exports not ended (opened or not) */
    size_t limbo_blocks; /* blocks freed by the producer, kept for a reader */
    size_t limbo_bytes;  /* their bytes */
    size_t opened;       /* blocks of other processes open here */
} galloc_ipc_stats_t;

/* galloc_ipc_stats: the counts now (after a collect). GALLOC_E_INVAL for NULL. */
GALLOC_API galloc_status_t galloc_ipc_stats(galloc_allocator_t *a, galloc_ipc_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_IPC_H */
