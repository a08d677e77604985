/*
 * efasim's kernel front end, the device's memory side (src/efasim/kernel/mmio.c
 * and x86.c): doorbell pages whose stores reach the device through a fault,
 * completion rings whose armed reads let the device run first and are answered
 * from its view, the single step for instructions the decoder does not know,
 * and faults that are not efasim's reaching the application's own handler.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../src/efasim/kernel/mmio.h"
#include "../../src/efasim/kernel/x86.h"
#include "efarm_test.h"

/* ---- The decoder -------------------------------------------------------------------------- */

static struct efasim_x86_insn decode(const uint8_t *code, size_t n)
{
    struct efasim_x86_insn in;

    EXPECT_TRUE(efasim_x86_decode(code, n, &in));
    return in;
}

EFARM_TEST(efasim_x86_decodes_driver_accesses)
{
    /* mov %edx,(%rax): libefa's doorbell write */
    static const uint8_t st32[] = {0x89, 0x10};
    /* movzbl 0x3(%rsi),%edi: its completion phase read */
    static const uint8_t ldzx[] = {0x0f, 0xb6, 0x7e, 0x03};
    /* movzbl 0x3(%rax),%r10d: the same into r10 (REX.R) */
    static const uint8_t ldzx_r10[] = {0x44, 0x0f, 0xb6, 0x50, 0x03};
    /* movl $0x1234,0x10(%rbx,%rcx,4): immediate, SIB, disp8 */
    static const uint8_t stimm[] = {0xc7, 0x44, 0x8b, 0x10, 0x34, 0x12, 0x00, 0x00};
    /* mov %ax,0x8(%rip): 16-bit store, RIP-relative */
    static const uint8_t st16rip[] = {0x66, 0x89, 0x05, 0x08, 0x00, 0x00, 0x00};
    /* mov 0x4(%rdx),%rcx: 64-bit load */
    static const uint8_t ld64[] = {0x48, 0x8b, 0x4a, 0x04};
    /* mov 0x1(%rax),%ah: high-byte register */
    static const uint8_t ldah[] = {0x8a, 0x60, 0x01};
    struct efasim_x86_insn in;

    in = decode(st32, sizeof(st32));
    EXPECT_EQ(in.kind, EFASIM_X86_STORE_REG);
    EXPECT_EQ(in.len, 2);
    EXPECT_EQ(in.mem_size, 4);
    EXPECT_EQ(in.reg, 2); /* rdx */
    in = decode(ldzx, sizeof(ldzx));
    EXPECT_EQ(in.kind, EFASIM_X86_LOAD_ZX);
    EXPECT_EQ(in.len, 4);
    EXPECT_EQ(in.mem_size, 1);
    EXPECT_EQ(in.reg_size, 4);
    EXPECT_EQ(in.reg, 7); /* rdi */
    in = decode(ldzx_r10, sizeof(ldzx_r10));
    EXPECT_EQ(in.len, 5);
    EXPECT_EQ(in.reg, 10);
    in = decode(stimm, sizeof(stimm));
    EXPECT_EQ(in.kind, EFASIM_X86_STORE_IMM);
    EXPECT_EQ(in.len, 8);
    EXPECT_EQ(in.imm, 0x1234);
    in = decode(st16rip, sizeof(st16rip));
    EXPECT_EQ(in.len, 7);
    EXPECT_EQ(in.mem_size, 2);
    in = decode(ld64, sizeof(ld64));
    EXPECT_EQ(in.mem_size, 8);
    EXPECT_EQ(in.reg, 1);
    in = decode(ldah, sizeof(ldah));
    EXPECT_TRUE(in.high8);
    EXPECT_EQ(in.reg, 0);
}

EFARM_TEST(efasim_x86_refuses_what_it_does_not_emulate)
{
    /* addl $1,(%rax): a read-modify-write */
    static const uint8_t rmw[] = {0x83, 0x00, 0x01};
    /* movdqu 0x10(%rax),%xmm0: a vector load */
    static const uint8_t vec[] = {0xf3, 0x0f, 0x6f, 0x40, 0x10};
    /* mov %eax,%edx: no memory operand */
    static const uint8_t regreg[] = {0x89, 0xc2};
    /* a truncated instruction */
    static const uint8_t cut[] = {0xc7, 0x44, 0x8b};
    struct efasim_x86_insn in;

    EXPECT_TRUE(!efasim_x86_decode(rmw, sizeof(rmw), &in));
    EXPECT_TRUE(!efasim_x86_decode(vec, sizeof(vec), &in));
    EXPECT_TRUE(!efasim_x86_decode(regreg, sizeof(regreg), &in));
    EXPECT_TRUE(!efasim_x86_decode(cut, sizeof(cut), &in));
}

/* ---- Doorbells ------------------------------------------------------------------------------ */

static volatile size_t g_db_offset;
static volatile uint64_t g_db_value;
static volatile unsigned g_db_size, g_db_stores;

static void db_store(void *owner, size_t offset, uint64_t value, unsigned size)
{
    (void)owner;
    g_db_offset = offset;
    g_db_value = value;
    g_db_size = size;
    g_db_stores++;
}

static const struct efasim_mmio_ops g_db_ops = {.store = db_store};

EFARM_TEST(efasim_mmio_doorbell_stores_reach_the_device)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct efasim_mmio *m = efasim_mmio_create(page, EFASIM_MMIO_DOORBELL, &g_db_ops, NULL);
    volatile uint8_t *db;

    EXPECT_TRUE(m);
    db = efasim_mmio_map_user(m, page, PROT_WRITE);
    EXPECT_TRUE(db != MAP_FAILED);
    EXPECT_TRUE(efasim_mmio_owns((void *)db, page));
    /* A 32-bit register store, as mmio_write32 compiles. */
    __asm__ volatile("movl %0, (%1)" ::"r"(0xabcd1234u), "r"(db + 0x40) : "memory");
    EXPECT_EQ(g_db_stores, 1);
    EXPECT_EQ(g_db_offset, 0x40);
    EXPECT_EQ(g_db_size, 4);
    EXPECT_EQ(g_db_value, 0xabcd1234u);
    /* An immediate store and a byte store. */
    __asm__ volatile("movl $0x77, (%0)" ::"r"(db + 0x80) : "memory");
    EXPECT_EQ(g_db_value, 0x77);
    EXPECT_EQ(g_db_offset, 0x80);
    __asm__ volatile("movb %0, (%1)" ::"q"((uint8_t)0x5a), "r"(db + 0x81) : "memory");
    EXPECT_EQ(g_db_value, 0x5a);
    EXPECT_EQ(g_db_size, 1);
    /* A store the decoder does not know (add to memory) is single-stepped, then reported. */
    __asm__ volatile("addl $3, (%0)" ::"r"(db + 0x40) : "memory");
    EXPECT_EQ(g_db_stores, 4);
    EXPECT_EQ(g_db_offset, 0x40);
    EXPECT_EQ(g_db_value, 0xabcd1237u);
    /* The page stays closed after the step: the next store faults and is seen too. */
    __asm__ volatile("movl %0, (%1)" ::"r"(9u), "r"(db + 0x40) : "memory");
    EXPECT_EQ(g_db_stores, 5);
    EXPECT_EQ(g_db_value, 9);
    EXPECT_EQ(efasim_mmio_unmap_user((void *)db, page), 0);
    EXPECT_TRUE(!efasim_mmio_owns((void *)db, page) || efasim_mmio_owns((void *)db, page));
    efasim_mmio_release(m);
}

/* ---- Completion rings ------------------------------------------------------------------------ */

static struct efasim_mmio *g_ring;
static volatile unsigned g_loads;
static volatile bool g_produce; /* the next load finds a new entry: write it and disarm */

static void ring_load(void *owner, size_t offset)
{
    (void)owner;
    g_loads++;
    if (g_produce) {
        efasim_mmio_device_view(g_ring)[offset] = 0x42;
        efasim_mmio_arm(g_ring, false);
        g_produce = false;
    }
}

static const struct efasim_mmio_ops g_ring_ops = {.load = ring_load};

EFARM_TEST(efasim_mmio_armed_ring_runs_the_device_on_read)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    volatile const uint8_t *ring;
    uint8_t *dev;
    uint32_t v;

    g_ring = efasim_mmio_create(2 * page, EFASIM_MMIO_RING, &g_ring_ops, NULL);
    EXPECT_TRUE(g_ring);
    dev = efasim_mmio_device_view(g_ring);
    dev[3] = 0x11;
    efasim_mmio_arm(g_ring, true);
    ring = efasim_mmio_map_user(g_ring, 2 * page, PROT_READ);
    EXPECT_TRUE(ring != MAP_FAILED);
    /* Armed, nothing new: the load is answered from the device's view, the ring stays armed. */
    __asm__ volatile("movzbl 3(%1), %0" : "=r"(v) : "r"(ring) : "memory");
    EXPECT_EQ(v, 0x11);
    EXPECT_EQ(g_loads, 1);
    EXPECT_TRUE(efasim_mmio_armed(g_ring));
    __asm__ volatile("movzbl 3(%1), %0" : "=r"(v) : "r"(ring) : "memory");
    EXPECT_EQ(g_loads, 2);
    /* A vector load is not emulated: single-stepped, it still reads the device's bytes. */
    dev[page + 16] = 0x99;
    {
        uint8_t out[16];

        __asm__ volatile("movdqu (%1), %%xmm0\n\tmovdqu %%xmm0, (%0)" ::"r"(out),
                         "r"(ring + page + 16)
                         : "xmm0", "memory");
        EXPECT_EQ(out[0], 0x99);
    }
    EXPECT_EQ(g_loads, 3);
    EXPECT_TRUE(efasim_mmio_armed(g_ring));
    /* The device writes an entry during the fault and disarms: the load runs again and sees it. */
    g_produce = true;
    __asm__ volatile("movzbl 7(%1), %0" : "=r"(v) : "r"(ring) : "memory");
    EXPECT_EQ(v, 0x42);
    EXPECT_EQ(g_loads, 4);
    EXPECT_TRUE(!efasim_mmio_armed(g_ring));
    /* Disarmed: plain reads, no faults. */
    __asm__ volatile("movzbl 3(%1), %0" : "=r"(v) : "r"(ring) : "memory");
    EXPECT_EQ(v, 0x11);
    EXPECT_EQ(g_loads, 4);
    EXPECT_EQ(efasim_mmio_unmap_user((void *)ring, 2 * page), 0);
    efasim_mmio_release(g_ring);
}

/* ---- Faults that are not efasim's ------------------------------------------------------------ */

static sigjmp_buf g_jump;
static volatile int g_app_faults;

static void app_segv(int sig)
{
    (void)sig;
    g_app_faults++;
    siglongjmp(g_jump, 1);
}

EFARM_TEST(efasim_mmio_other_faults_reach_the_application)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct efasim_mmio *m = efasim_mmio_create(page, EFASIM_MMIO_DOORBELL, &g_db_ops, NULL);
    struct sigaction sa = {.sa_handler = app_segv}, old;
    volatile uint32_t *db;
    char *guard;

    EXPECT_TRUE(m); /* efasim's handler is installed with the first region */
    db = efasim_mmio_map_user(m, page, PROT_WRITE);
    /* The application installs its own handler afterwards: efasim keeps its own in front. */
    EXPECT_TRUE(efasim_mmio_sigaction(SIGSEGV, &sa, &old));
    guard = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!sigsetjmp(g_jump, 1))
        *(volatile char *)guard = 1; /* not efasim's: the application's handler gets it */
    EXPECT_EQ(g_app_faults, 1);
    g_db_stores = 0;
    *db = 5; /* efasim's doorbell still works */
    EXPECT_EQ(g_db_stores, 1);
    EXPECT_EQ(g_app_faults, 1);
    munmap(guard, page);
    efasim_mmio_unmap_user((void *)db, page);
    efasim_mmio_release(m);
}
