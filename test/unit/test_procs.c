/*
 * Helpers for tests that run several processes: whole-buffer pipe I/O
 * between them, and free UDP ports on the loopback address (for efasim's
 * EFASIM_QPN, which pins a QP number).
 */
#include "test_procs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efarm_test.h"

void efarm_test_pipe_write(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    while (len) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            efarm_test_fail(__FILE__, __LINE__, "write to the other process: %s", strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}
void efarm_test_pipe_read(int fd, void *buf, size_t len, const char *what)
{
    uint8_t *p = buf;

    while (len) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int rc = poll(&pfd, 1, EFARM_TEST_PIPE_WAIT_S * 1000);
        ssize_t n;

        if (rc < 0 && errno == EINTR)
            continue;
        if (rc == 0)
            efarm_test_fail(__FILE__, __LINE__, "no %s from the other process within %d s", what,
                            EFARM_TEST_PIPE_WAIT_S);
        n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            efarm_test_fail(__FILE__, __LINE__, "the other process exited before sending %s", what);
        if (n < 0)
            efarm_test_fail(__FILE__, __LINE__, "read of %s: %s", what, strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}

/* A UDP socket on 127.0.0.1:port (0 = any, its port stored in *port_p), or -1 if taken. */
int efarm_test_udp_bind(uint16_t port, uint16_t *port_p)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    EXPECT_TRUE(fd >= 0);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
        close(fd);
        return -1;
    }
    if (port_p) {
        EXPECT_EQ(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
        *port_p = ntohs(sin.sin_port);
    }
    return fd;
}

uint16_t efarm_test_qpn_port(uint32_t qpn)
{
    const char *env = getenv("EFASIM_QPN_PORT");
    unsigned long base = env && *env ? strtoul(env, NULL, 0) : EFARM_TEST_QPN_PORT_DEFAULT;

    EXPECT_TRUE(base + qpn <= 0xffff);
    return (uint16_t)(base + qpn);
}

uint32_t efarm_test_free_qpns(unsigned n)
{
    uint64_t pick = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
    int fds[8];

    EXPECT_TRUE(n >= 1 && n <= 8);
    for (unsigned attempt = 0; attempt < 200; attempt++) {
        uint32_t first;
        unsigned k = 0;

        pick = pick * 6364136223846793005ull + 1442695040888963407ull;
        first = 128 + (uint32_t)((pick >> 33) % (128 - n + 1)); /* 128 .. 256 - n */
        while (k < n && (fds[k] = efarm_test_udp_bind(efarm_test_qpn_port(first + k), NULL)) >= 0)
            k++;
        for (unsigned i = 0; i < k; i++)
            close(fds[i]);
        if (k == n)
            return first;
    }
    efarm_test_fail(__FILE__, __LINE__, "no run of %u free QP numbers found", n);
}

void efarm_test_fork_child(struct efarm_test_child *c,
                           void (*fn)(int rfd, int wfd, pid_t parent, void *arg), void *arg)
{
    int to_child[2], to_parent[2];
    pid_t parent = getpid();

    EXPECT_EQ(pipe(to_child), 0);
    EXPECT_EQ(pipe(to_parent), 0);
    fflush(NULL);
    c->pid = fork();
    EXPECT_TRUE(c->pid >= 0);
    if (c->pid == 0) {
        close(to_child[1]);
        close(to_parent[0]);
        fn(to_child[0], to_parent[1], parent, arg);
        _exit(4);
    }
    close(to_child[0]);
    close(to_parent[1]);
    c->rfd = to_parent[0];
    c->wfd = to_child[1];
}

void efarm_test_child_reap(const struct efarm_test_child *c, const char *who)
{
    int status;

    while (waitpid(c->pid, &status, 0) < 0)
        EXPECT_EQ(errno, EINTR);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        efarm_test_fail(__FILE__, __LINE__, "%s ended with status 0x%x", who, status);
}
