/*
 * fdpass.c: messages with descriptors on a Unix socket (fdpass.h).
 */
#include "util/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef union control {
    char buf[CMSG_SPACE(sizeof(int) * GA_FDPASS_BATCH)];
    struct cmsghdr align;
} control_t;

/* One sendmsg of [msg, msg+len) with n (<= GA_FDPASS_BATCH) descriptors; a
 * short write sends the rest without them (they went with the first byte). */
static int send_part(int sock, const char *msg, size_t len, const int *fds, size_t n)
{
    control_t c;
    memset(&c, 0, sizeof(c));
    while (len > 0) {
        struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (n > 0) {
            mh.msg_control = c.buf;
            mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
            struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
            memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
        }
        ssize_t w = sendmsg(sock, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        msg += w;
        len -= (size_t)w;
        n = 0;
    }
    return 0;
}

int ga_fdpass_send(int sock, const void *msg, size_t len, const int *fds, size_t n)
{
    size_t first = n < GA_FDPASS_BATCH ? n : GA_FDPASS_BATCH;
    int err = send_part(sock, msg, len, fds, first);
    for (size_t i = first; err == 0 && i < n; i += GA_FDPASS_BATCH) {
        size_t k = n - i < GA_FDPASS_BATCH ? n - i : GA_FDPASS_BATCH;
        err = send_part(sock, "F", 1, fds + i, k);
    }
    return err;
}

/* Read exactly len bytes; the descriptors of the first read that brings any. */
static int recv_part(int sock, char *msg, size_t len, int *fds, size_t *n)
{
    *n = 0;
    while (len > 0) {
        control_t c;
        struct iovec iov = {.iov_base = msg, .iov_len = len};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)};
        ssize_t r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (r == 0)
            return ECONNRESET;
        int err = 0;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                continue;
            size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            int got[GA_FDPASS_BATCH];
            memcpy(got, CMSG_DATA(cm), k * sizeof(int));
            for (size_t i = 0; i < k; i++) {
                if (*n < GA_FDPASS_BATCH)
                    fds[(*n)++] = got[i];
                else
                    (void)close(got[i]); /* more than the protocol sends: not ours to keep */
            }
        }
        if (mh.msg_flags & MSG_CTRUNC)
            err = EPROTO;
        if (err != 0) {
            for (size_t i = 0; i < *n; i++)
                (void)close(fds[i]);
            *n = 0;
            return err;
        }
        msg += r;
        len -= (size_t)r;
    }
    return 0;
}

int ga_fdpass_recv_msg(int sock, void *msg, size_t len, int *fds, size_t *n)
{
    return recv_part(sock, msg, len, fds, n);
}

int ga_fdpass_recv_fds(int sock, int *fds, size_t *n)
{
    char b;
    int err = recv_part(sock, &b, 1, fds, n);
    if (err == 0 && b != 'F') {
        for (size_t i = 0; i < *n; i++)
            (void)close(fds[i]);
        *n = 0;
        return EPROTO;
    }
    return err;
}
