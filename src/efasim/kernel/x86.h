/*
 * The x86-64 accesses efasim's trapped device pages understand without
 * single-stepping (x86.c): register and immediate stores, plain, zero- and
 * sign-extending loads.
 */
#ifndef EFASIM_X86_H
#define EFASIM_X86_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum efasim_x86_kind {
    EFASIM_X86_UNKNOWN = 0,
    EFASIM_X86_STORE_REG, /* mem = reg */
    EFASIM_X86_STORE_IMM, /* mem = imm */
    EFASIM_X86_LOAD,      /* reg = mem (8/16-bit keep the register's upper bits) */
    EFASIM_X86_LOAD_ZX,   /* reg = zero-extended mem */
    EFASIM_X86_LOAD_SX,   /* reg = sign-extended mem */
};

struct efasim_x86_insn {
    uint8_t kind;     /* enum efasim_x86_kind */
    uint8_t len;      /* instruction bytes */
    uint8_t mem_size; /* bytes of memory accessed: 1, 2, 4, 8 */
    uint8_t reg_size; /* register operand size: 1, 2, 4, 8 */
    uint8_t reg;      /* register number 0..15 (rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8..) */
    bool high8;       /* the register is AH, CH, DH or BH (reg then names RAX..RBX) */
    uint64_t imm;     /* a store's immediate, sign-extended */
};

/*
 * Decode the instruction at code (at most avail bytes readable). true and the
 * instruction when it is one of the memory accesses above; false otherwise.
 */
bool efasim_x86_decode(const uint8_t *code, size_t avail, struct efasim_x86_insn *insn_p);

#endif /* EFASIM_X86_H */
