/*
 * fake_gpu_ipc.c: the fake driver's memfds and its sharing of device memory
 * between processes (see IPC in fake_gpu.h): IPC handles of linear
 * allocations (cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle)
 * and descriptors of physical handles (cuMemExportToShareableHandle /
 * cuMemImportFromShareableHandle with POSIX file descriptors).
 *
 * Why memfds: a memfd is a file, so another process reaches the very pages
 * through /proc/<pid>/fd/<n> (same user) or a descriptor passed over a
 * socket, and whatever either writes the other reads, as two processes
 * sharing device memory do. The handle names the exporter's descriptor and
 * the file's identity (inode, st_dev): a number reused after the allocation
 * was freed names another file, which the opener refuses.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fake_cuda/fake_gpu_int.h"

#define FG_IPC_MAGIC 0x43504946u /* "FIPC" */

/* What ipc_get writes into the vendor's 64 bytes. */
typedef struct fg_ipc_wire {
    uint32_t magic; /* FG_IPC_MAGIC */
    int32_t pid;    /* the exporting process */
    int32_t fd;     /* its memfd's number there, open while the allocation lives */
    int32_t device; /* the allocation's device */
    uint64_t size;  /* its requested size */
    uint64_t ino;   /* the memfd's inode and device: the cookie that tells a reused number */
    uint64_t dev;
    uint8_t unused[FAKE_GPU_IPC_BYTES - 40]; /* zero: the rest of the vendor's 64 bytes */
} fg_ipc_wire_t;
_Static_assert(sizeof(fg_ipc_wire_t) == FAKE_GPU_IPC_BYTES, "the wire format fills the vendor's handle");

bool fgi_memfd(size_t size, int *fd)
{
    int f = memfd_create("fake_gpu", MFD_CLOEXEC);
    if (f < 0)
        return false;
    if (ftruncate(f, (off_t)size) != 0) {
        close(f);
        return false;
    }
    *fd = f;
    return true;
}

bool fgi_map_fd(int fd, size_t size, int prot, void **base, size_t *len, uint64_t *aligned)
{
    if (!fgi_map(size, PROT_NONE, false, base, len, aligned))
        return false;
    if (mmap((void *)(uintptr_t)*aligned, size, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
        munmap(*base, *len);
        return false;
    }
    return true;
}

fg_rc_t fg_ipc_get(uint64_t addr, void *out)
{
    FG_LOCK();
    int device = 0;
    struct stat st;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_alloc_t *a = rc == FG_OK ? fgi_alloc_find(addr) : NULL;
    if (rc == FG_OK && out == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "pHandle is NULL");
    else if (rc == FG_OK && (a == NULL || a->kind != FG_SEGMENT))
        rc = fgi_violation(FG_INVALID_VALUE, "%#llx is not the base of a live linear allocation",
                           (unsigned long long)addr);
    if (rc == FG_OK && fstat(a->fd, &st) != 0)
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK) {
        fg_ipc_wire_t w = {.magic = FG_IPC_MAGIC,
                           .pid = (int32_t)getpid(),
                           .fd = a->fd,
                           .device = a->device,
                           .size = a->size,
                           .ino = (uint64_t)st.st_ino,
                           .dev = (uint64_t)st.st_dev};
        memcpy(out, &w, sizeof(w));
    }
    FG_UNLOCK();
    return rc;
}

static fg_ipc_t *ipc_find(uint64_t addr)
{
    for (size_t i = 0; i < fg.n_ipcs; i++)
        if (fg.ipcs[i].addr == addr)
            return &fg.ipcs[i];
    return NULL;
}

/* Open the exporter's memfd and check it is still the file the handle names. */
static fg_rc_t open_exported(const fg_ipc_wire_t *w, int *fd, size_t *len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)w->pid, (int)w->fd);
    int f = open(path, O_RDWR | O_CLOEXEC);
    struct stat st;
    if (f < 0)
        return fgi_violation(FG_INVALID_HANDLE, "process %d's memory is gone (%s does not open)", (int)w->pid, path);
    if (fstat(f, &st) != 0 || (uint64_t)st.st_ino != w->ino || (uint64_t)st.st_dev != w->dev ||
        (uint64_t)st.st_size < w->size) {
        close(f);
        return fgi_violation(FG_INVALID_HANDLE, "process %d freed the allocation this handle names", (int)w->pid);
    }
    *fd = f;
    *len = (size_t)st.st_size;
    return FG_OK;
}

fg_rc_t fg_ipc_open(uint64_t *addr, const void *in, unsigned flags)
{
    FG_LOCK();
    int device = 0, fd = -1;
    size_t len = 0;
    fg_ipc_wire_t w = {0};
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && (addr == NULL || in == NULL || (flags & ~1u) != 0))
        rc = fgi_violation(FG_INVALID_VALUE, "pdptr %p, flags %u: want an output and flags 0 or lazy peer access (1)",
                           (void *)addr, flags);
    if (rc == FG_OK) {
        memcpy(&w, in, sizeof(w));
        if (w.magic != FG_IPC_MAGIC || w.size == 0)
            rc = fgi_violation(FG_INVALID_VALUE, "not an IPC memory handle (magic %#x)", w.magic);
    }
    if (rc == FG_OK && w.pid == (int32_t)getpid())
        rc = FG_INVALID_CONTEXT; /* the driver's answer to opening one's own memory, which a caller may try */
    for (size_t i = 0; rc == FG_OK && i < fg.n_ipcs; i++)
        if (fg.ipcs[i].pid == w.pid && fg.ipcs[i].ino == w.ino && fg.ipcs[i].dev == w.dev)
            rc = fgi_violation(FG_INVALID_VALUE, "this handle is already open in this process at %#llx",
                               (unsigned long long)fg.ipcs[i].addr);
    if (rc == FG_OK && !fgi_grow((void **)&fg.ipcs, &fg.cap_ipcs, fg.n_ipcs + 1, sizeof(fg_ipc_t)))
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK)
        rc = open_exported(&w, &fd, &len);
    fg_ipc_t o = {.size = w.size, .device = device, .pid = w.pid, .ino = w.ino, .dev = w.dev};
    if (rc == FG_OK && !fgi_map_fd(fd, len, PROT_READ | PROT_WRITE, &o.map_base, &o.map_len, &o.addr))
        rc = FG_OUT_OF_MEMORY;
    if (fd >= 0)
        close(fd); /* the mapping holds the pages */
    if (rc == FG_OK) {
        fg.ipcs[fg.n_ipcs++] = o;
        *addr = o.addr;
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_ipc_close(uint64_t addr)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_ipc_t *o = rc == FG_OK ? ipc_find(addr) : NULL;
    if (rc == FG_OK && o == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "%#llx is not an address ipc_open returned (closed twice?)",
                           (unsigned long long)addr);
    if (rc == FG_OK) {
        munmap(o->map_base, o->map_len);
        FG_REMOVE(ipcs, (size_t)(o - fg.ipcs));
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_export_fd(uint64_t handle, int *fd)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_handle_t *h = rc == FG_OK ? fgi_handle_find(handle) : NULL;
    if (rc == FG_OK && fd == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "shareableHandle is NULL");
    else if (rc == FG_OK && (h == NULL || h->released))
        rc = fgi_violation(FG_INVALID_VALUE, "handle %llu is not live", (unsigned long long)handle);
    else if (rc == FG_OK && !h->exportable)
        rc = fgi_violation(FG_INVALID_VALUE,
                           "handle %llu was not created exportable (no POSIX file descriptor type requested)",
                           (unsigned long long)handle);
    int f = -1;
    if (rc == FG_OK && (f = fcntl(h->fd, F_DUPFD_CLOEXEC, 0)) < 0)
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK)
        *fd = f;
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_import_fd(uint64_t *handle, int fd)
{
    FG_LOCK();
    int device = 0;
    struct stat st;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && handle == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "handle is NULL");
    else if (rc == FG_OK && (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0 ||
                             (size_t)st.st_size % fg.gran != 0))
        rc = fgi_violation(FG_INVALID_VALUE, "descriptor %d is not exported device memory", fd);
    if (rc == FG_OK && !fgi_grow((void **)&fg.handles, &fg.cap_handles, fg.n_handles + 1, sizeof(fg_handle_t)))
        rc = FG_OUT_OF_MEMORY;
    int f = -1;
    if (rc == FG_OK && (f = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) /* the caller keeps its own descriptor */
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK) {
        /* Contents are the exporter's: no garbage; capacity is the exporter's device's. */
        fg.handles[fg.n_handles++] = (fg_handle_t){
            .id = ++fg.next_handle, .size = (size_t)st.st_size, .fd = f, .exportable = true, .device = device};
        *handle = fg.next_handle;
    }
    FG_UNLOCK();
    return rc;
}

uint64_t fgi_ipc_release_all(int device)
{
    uint64_t live = 0;
    for (size_t i = 0; i < fg.n_ipcs;) {
        if (device >= 0 && fg.ipcs[i].device != device) {
            i++;
            continue;
        }
        live++;
        munmap(fg.ipcs[i].map_base, fg.ipcs[i].map_len);
        FG_REMOVE(ipcs, i);
    }
    return live;
}
