/*
 * fdpass.h: a message and file descriptors over a connected AF_UNIX stream
 * socket (SCM_RIGHTS, unix(7)), for galloc_ipc_send / galloc_ipc_recv.
 *
 * The message goes first with up to GA_FDPASS_BATCH descriptors; more follow
 * in batches, each with one byte of payload, because the kernel takes at
 * most SCM_MAX_FD (253) descriptors a message. The receiver knows how many
 * to expect from the message itself. Interrupted calls are retried.
 *
 * Both return 0 or an errno value (EPROTO: the peer sent something else,
 * ECONNRESET: the peer closed the socket).
 */
#ifndef GA_UTIL_FDPASS_H
#define GA_UTIL_FDPASS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GA_FDPASS_BATCH 250

/* ga_fdpass_send: len bytes of msg and the n descriptors fds (they stay the caller's). */
int ga_fdpass_send(int sock, const void *msg, size_t len, const int *fds, size_t n);
/* ga_fdpass_recv_msg: the len-byte message, and into fds (room for at most
 * GA_FDPASS_BATCH) the descriptors that came with it, *n of them. */
int ga_fdpass_recv_msg(int sock, void *msg, size_t len, int *fds, size_t *n);
/* ga_fdpass_recv_fds: the next batch of descriptors, *n of them (at most GA_FDPASS_BATCH). */
int ga_fdpass_recv_fds(int sock, int *fds, size_t *n);

#ifdef __cplusplus
}
#endif
#endif /* GA_UTIL_FDPASS_H */
