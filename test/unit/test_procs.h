/*
 * Helpers for tests that run several processes (test_procs.c).
 */
#ifndef EFARM_TEST_PROCS_H
#define EFARM_TEST_PROCS_H

#include <stddef.h>
#include <stdint.h>

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
 * The first of n (1..8) consecutive UDP ports free on 127.0.0.1 now, taken
 * below the kernel's ephemeral range where it can be, so that no socket bound
 * to port 0 takes one before the test binds it (EFASIM_QPN).
 */
uint16_t efarm_test_free_ports(unsigned n);

#endif /* EFARM_TEST_PROCS_H */
