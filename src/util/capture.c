/* Packet capture to a pcap file (see efarm_capture.h). */
#include "efarm_capture.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "efarm_config.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_file;
static bool g_opened;   /* efarm_capture_open ran */
static int g_open_ret;  /* and what it returned */
static int g_rank = -1; /* MPI rank, -1 outside MPI */
static char g_path[4096];

void efarm_capture_set_rank(int rank)
{
    g_rank = rank;
}

/* EFARM_CAPTURE's pattern, expanded into g_path; -ENAMETOOLONG or -EINVAL. */
static int expand(const char *pattern)
{
    size_t n = 0;
    char host[256];

    for (const char *p = pattern; *p; p++) {
        char piece[300];

        if (*p != '%') {
            piece[0] = *p;
            piece[1] = '\0';
        } else {
            switch (*++p) {
            case 'p':
                snprintf(piece, sizeof(piece), "%d", (int)getpid());
                break;
            case 'r':
                snprintf(piece, sizeof(piece), "%d", g_rank >= 0 ? g_rank : (int)getpid());
                break;
            case 'h':
                if (gethostname(host, sizeof(host)))
                    snprintf(host, sizeof(host), "host");
                host[sizeof(host) - 1] = '\0';
                snprintf(piece, sizeof(piece), "%s", host);
                break;
            case '%':
                snprintf(piece, sizeof(piece), "%%");
                break;
            default:
                return -EINVAL;
            }
        }
        if (n + strlen(piece) >= sizeof(g_path))
            return -ENAMETOOLONG;
        memcpy(g_path + n, piece, strlen(piece) + 1);
        n += strlen(piece);
    }
    return 0;
}

static void put_u32(FILE *f, uint32_t v) /* host order: pcap's file header and record headers */
{
    fwrite(&v, sizeof(v), 1, f);
}

static void put_u16(FILE *f, uint16_t v)
{
    fwrite(&v, sizeof(v), 1, f);
}

static void at_exit_close(void)
{
    efarm_capture_close();
}

int efarm_capture_open(void)
{
    const char *pattern = efarm_config()->capture;
    int ret = 0;

    pthread_mutex_lock(&g_lock);
    if (g_opened) {
        ret = g_open_ret;
        goto out;
    }
    g_opened = true;
    if (!*pattern)
        goto out;
    ret = expand(pattern);
    if (ret) {
        fprintf(stderr, "efarm: EFARM_CAPTURE=%s: %s (patterns: %%p pid, %%r rank, %%h host)\n",
                pattern, ret == -EINVAL ? "unknown %-sequence" : "name too long");
        goto out;
    }
    g_file = fopen(g_path, "wb");
    if (!g_file) {
        ret = -errno;
        fprintf(stderr, "efarm: EFARM_CAPTURE: cannot create %s: %s\n", g_path, strerror(errno));
        goto out;
    }
    put_u32(g_file, EFARM_CAPTURE_PCAP_MAGIC_NS);
    put_u16(g_file, 2);
    put_u16(g_file, 4);
    put_u32(g_file, 0); /* thiszone */
    put_u32(g_file, 0); /* sigfigs */
    put_u32(g_file, EFARM_CAPTURE_SNAPLEN);
    put_u32(g_file, EFARM_CAPTURE_LINKTYPE);
    atexit(at_exit_close);
out:
    g_open_ret = ret;
    pthread_mutex_unlock(&g_lock);
    return ret;
}

bool efarm_capture_on(void)
{
    return g_file != NULL;
}

static void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

void efarm_capture_write(const struct efarm_capture_rec *rec, const uint8_t *pkt, uint32_t len)
{
    uint8_t hdr[EFARM_CAPTURE_HDR_LEN] = {0};
    uint32_t keep = len;
    struct timespec ts;

    if (!g_file)
        return;
    if (keep > EFARM_CAPTURE_SNAPLEN - EFARM_CAPTURE_HDR_LEN)
        keep = EFARM_CAPTURE_SNAPLEN - EFARM_CAPTURE_HDR_LEN;
    hdr[0] = EFARM_CAPTURE_VERSION;
    hdr[1] = (uint8_t)rec->dir;
    hdr[2] = 0;
    hdr[3] = EFARM_CAPTURE_HDR_LEN;
    be32(hdr + 4, rec->local_qpn);
    be32(hdr + 8, rec->peer_qpn);
    be32(hdr + 12, rec->peer_index);
    if (rec->peer_gid)
        memcpy(hdr + 16, rec->peer_gid, 16);
    be32(hdr + 32, (uint32_t)getpid());
    be32(hdr + 36, (uint32_t)g_rank);
    clock_gettime(CLOCK_REALTIME, &ts);
    pthread_mutex_lock(&g_lock);
    if (g_file) {
        put_u32(g_file, (uint32_t)ts.tv_sec);
        put_u32(g_file, (uint32_t)ts.tv_nsec);
        put_u32(g_file, EFARM_CAPTURE_HDR_LEN + keep);
        put_u32(g_file, EFARM_CAPTURE_HDR_LEN + len);
        fwrite(hdr, 1, sizeof(hdr), g_file);
        if (fwrite(pkt, 1, keep, g_file) != keep) {
            fprintf(stderr, "efarm: EFARM_CAPTURE: writing %s failed: %s; capture stopped\n",
                    g_path, strerror(errno));
            fclose(g_file);
            g_file = NULL;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

void efarm_capture_close(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_file) {
        fclose(g_file);
        g_file = NULL;
    }
    pthread_mutex_unlock(&g_lock);
}
