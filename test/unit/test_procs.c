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
#include <string.h>
#include <sys/socket.h>
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

/*
 * A port p with p .. p + n - 1 all free on 127.0.0.1 at the time of the call,
 * taken below the kernel's ephemeral range where it can be, so that no socket
 * bound to port 0 (ours or another program's) takes it before the test does.
 */
uint16_t efarm_test_free_ports(unsigned n)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    unsigned low = 0, high = 0, first = 1024, span = 0;
    uint64_t pick = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
    int fds[8];

    EXPECT_TRUE(n >= 1 && n <= 8);
    if (f) {
        if (fscanf(f, "%u %u", &low, &high) != 2)
            low = 0;
        fclose(f);
    }
    if (low >= 2048 + n) {
        first = low > 16384 + 1024 ? low - 16384 : 1024;
        span = low - n - first;
    }
    for (unsigned attempt = 0; attempt < 200; attempt++) {
        uint16_t base = 0;
        unsigned k = 1;

        pick = pick * 6364136223846793005ull + 1442695040888963407ull;
        if (span)
            fds[0] = efarm_test_udp_bind((uint16_t)(first + (pick >> 33) % span), &base);
        else
            fds[0] = efarm_test_udp_bind(0, &base);
        if (fds[0] < 0)
            continue;
        while (k < n && base + k <= 0xffff &&
               (fds[k] = efarm_test_udp_bind((uint16_t)(base + k), NULL)) >= 0)
            k++;
        for (unsigned i = 0; i < k; i++)
            close(fds[i]);
        if (k == n)
            return base;
    }
    efarm_test_fail(__FILE__, __LINE__, "no run of %u free UDP ports found", n);
}
