/*
 * Helpers for tests that run several processes (test_procs.c).
 */
#ifndef EFARM_TEST_PROCS_H
#define EFARM_TEST_PROCS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* How long a test waits for a word from another of its processes. */
#define EFARM_TEST_PIPE_WAIT_S 30

/* Whole-buffer pipe I/O between a test's processes; a short or late read fails the test. */
void efarm_test_pipe_write(int fd, const void *buf, size_t len);
void efarm_test_pipe_read(int fd, void *buf, size_t len, const char *what);

/*
 * A UDP socket bound to 127.0.0.1:port (0: any, its port stored in *port_p),
 * or -1 if the port is taken. The caller closes it.
 */
int efarm_test_udp_bind(uint16_t port, uint16_t *port_p);

/*
 * efasim's QP numbers: QP number qpn of a device is the UDP socket bound to
 * port EFASIM_QPN_PORT + qpn on its address (efasim's README). The port of
 * qpn on 127.0.0.1, with EFASIM_QPN_PORT from the environment or efasim's
 * default (20000; efasim_device_qp_numbers_as_efa checks the two agree).
 */
#define EFARM_TEST_QPN_PORT_DEFAULT 20000
uint16_t efarm_test_qpn_port(uint32_t qpn);

/*
 * The first of n (1..8) consecutive QP numbers free on efasim_0 now (their
 * ports unbound), drawn from the upper half of the default 256 numbers, so
 * that QPs taking the lowest free number (every QP without EFASIM_QPN) do not
 * reach them before the test binds them (EFASIM_QPN).
 */
uint32_t efarm_test_free_qpns(unsigned n);

/* A child process of the test and the parent's ends of the two pipes to it. */
struct efarm_test_child {
    pid_t pid;
    int rfd, wfd; /* the parent's: what the child writes, what the child reads */
};

/*
 * Forks a child that runs fn(rfd, wfd, parent, arg) with its own ends of the
 * two pipes; fn ends the child with _exit (a return is exit status 4). Before
 * the test's first verbs call, as the child opens its own devices.
 */
void efarm_test_fork_child(struct efarm_test_child *c,
                           void (*fn)(int rfd, int wfd, pid_t parent, void *arg), void *arg);
/* Waits for the child; the test fails, naming `who`, unless it exited with 0. */
void efarm_test_child_reap(const struct efarm_test_child *c, const char *who);

#endif /* EFARM_TEST_PROCS_H */
