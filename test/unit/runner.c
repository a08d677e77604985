/*
 * Unit-test runner: runs every registered test (or those whose name contains
 * one of the arguments) in a child process with a timeout, prints one line per
 * test and ends with "N passed, N failed". Exit status 0 only if all passed.
 *
 *   efarm-unit [--list] [--seed N] [pattern...]
 */
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "efarm_errno.h"
#include "efarm_test.h"

#define MAX_TESTS 1024

struct test_entry {
    const char *name;
    efarm_test_fn fn;
    unsigned timeout_s;
};

static struct test_entry g_tests[MAX_TESTS];
static unsigned g_ntests;
static uint64_t g_seed = 0x9e3779b97f4a7c15ull;
static uint64_t g_rand_state;
static _Thread_local char g_context[256]; /* each thread's own: tests may run threads */

void efarm_test_context(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(g_context, sizeof(g_context), fmt, ap);
    va_end(ap);
}

static void print_context(void)
{
    if (g_context[0])
        fprintf(stderr, "  while: %s\n", g_context);
}

void efarm_test_register(const char *name, efarm_test_fn fn, unsigned timeout_s)
{
    if (g_ntests == MAX_TESTS) {
        fprintf(stderr, "efarm-unit: more than %d tests; raise MAX_TESTS\n", MAX_TESTS);
        exit(2);
    }
    g_tests[g_ntests++] = (struct test_entry){name, fn, timeout_s};
}

void efarm_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    print_context();
    fprintf(stderr, "  %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

void efarm_test_fail_mem(const char *file, int line, const char *an, const char *bn, const void *a,
                         const void *b, size_t n)
{
    const uint8_t *pa = a, *pb = b;
    size_t i = 0;

    while (i < n && pa[i] == pb[i])
        i++;
    print_context();
    fprintf(stderr, "  %s:%d: %s and %s differ first at byte %zu of %zu\n", file, line, an, bn, i,
            n);
    for (int row = 0; row < 2; row++) {
        const uint8_t *p = row ? pb : pa;
        size_t start = i >= 8 ? i - 8 : 0, end = i + 16 < n ? i + 16 : n;

        fprintf(stderr, "    %s [%zu..%zu):", row ? bn : an, start, end);
        for (size_t k = start; k < end; k++)
            fprintf(stderr, "%s%02x", k == i ? " >" : " ", p[k]);
        fputc('\n', stderr);
    }
    exit(1);
}

/* Exit status of a test that cannot run here (the automake convention). */
#define SKIP_STATUS 77

void efarm_test_skip(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "  skip: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(NULL);
    exit(SKIP_STATUS);
}

static char g_device[16] = "sim";

const char *efarm_test_device(void)
{
    return g_device;
}

uint64_t efarm_test_seed(void)
{
    return g_seed;
}

/* One stream per test; a test's threads draw from it in turn (their order is theirs). */
uint64_t efarm_test_rand(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    uint64_t x;

    pthread_mutex_lock(&lock);
    g_rand_state ^= g_rand_state >> 12;
    g_rand_state ^= g_rand_state << 25;
    g_rand_state ^= g_rand_state >> 27;
    x = g_rand_state;
    pthread_mutex_unlock(&lock);
    return x * 0x2545f4914f6cdd1dull;
}

static int matches(const char *name, int argc, char **argv, int first)
{
    if (first >= argc)
        return 1;
    for (int i = first; i < argc; i++)
        if (strstr(name, argv[i]))
            return 1;
    return 0;
}

/* Run one test in a child; returns 1 if it passed, 0 if it failed, -1 if it was skipped. */
static int run_one(const struct test_entry *t)
{
    struct timespec t0, t1;
    int status;
    pid_t pid;

    fflush(NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid = fork();
    if (pid < 0) {
        printf("FAIL %s (fork: %s)\n", t->name, strerror(errno));
        return 0;
    }
    if (pid == 0) {
        /*
         * A fresh, reproducible random stream per test, whatever ran before:
         * from the seed and the test's name only (never an address, which
         * ASLR moves from run to run).
         */
        g_rand_state = g_seed ^ 0x5851f42d4c957f2dull;
        for (const char *c = t->name; *c; c++)
            g_rand_state = g_rand_state * 31 + (uint8_t)*c;
        if (!g_rand_state)
            g_rand_state = 1;
        alarm(t->timeout_s);
        t->fn();
        fflush(NULL);
        exit(0); /* not _exit: LeakSanitizer checks the test at exit */
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;

    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        printf("PASS %s (%.0f ms)\n", t->name, ms);
        return 1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_STATUS) {
        printf("SKIP %s\n", t->name);
        return -1;
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        printf("FAIL %s (timeout after %u s)\n", t->name, t->timeout_s);
    else if (WIFSIGNALED(status))
        printf("FAIL %s (signal %d: %s)\n", t->name, WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        printf("FAIL %s (exit %d)\n", t->name, WEXITSTATUS(status));
    return 0;
}

int main(int argc, char **argv)
{
    unsigned passed = 0, failed = 0, skipped = 0;
    int first = 1;

    setvbuf(stdout, NULL, _IOLBF, 0);
    /*
     * The engine's tests check subprotocol boundaries at the reference
     * thresholds (medium to 64 KiB, reads from 1 MiB); the selection-policy
     * tests name their profiles through the endpoint attribute.
     */
    setenv("EFARM_PROFILE", "reference", 0);
    if (getenv("EFARM_TEST_SEED"))
        g_seed = strtoull(getenv("EFARM_TEST_SEED"), NULL, 0);
    /* The runner's own variable, not efarm's: taken out of the environment, which
     * efarm checks for names it does not know. */
    const char *device = getenv("EFARM_TEST_DEVICE");
    if (device && *device) {
        if (strcmp(device, "sim") && strcmp(device, "efa")) {
            fprintf(stderr, "EFARM_TEST_DEVICE must be sim or efa, not '%s'\n", device);
            return 2;
        }
        snprintf(g_device, sizeof g_device, "%s", device);
    }
    unsetenv("EFARM_TEST_DEVICE");
    while (first < argc && argv[first][0] == '-') {
        if (!strcmp(argv[first], "--list")) {
            for (unsigned i = 0; i < g_ntests; i++)
                puts(g_tests[i].name);
            return 0;
        }
        if (!strcmp(argv[first], "--seed") && first + 1 < argc) {
            g_seed = strtoull(argv[first + 1], NULL, 0);
            first += 2;
            continue;
        }
        fprintf(stderr, "usage: %s [--list] [--seed N] [pattern...]\n", argv[0]);
        return 2;
    }
    printf("efarm-unit: %u tests registered, seed 0x%" PRIx64 "\n", g_ntests, g_seed);
    for (unsigned i = 0; i < g_ntests; i++) {
        if (!matches(g_tests[i].name, argc, argv, first))
            continue;
        switch (run_one(&g_tests[i])) {
        case 1:
            passed++;
            break;
        case 0:
            failed++;
            break;
        default:
            skipped++;
            break;
        }
    }
    if (skipped)
        printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
    else
        printf("%u passed, %u failed\n", passed, failed);
    return failed || !passed ? 1 : 0;
}
