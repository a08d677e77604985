/*
 * Just enough of an x86-64 instruction decoder for the accesses a driver
 * makes to a device's memory: the store that rings a doorbell and the load
 * that reads a completion's phase. A fault on one of efasim's trapped pages
 * (mmio.c) decodes the faulting instruction here so the store can be taken,
 * or the load answered, without a second fault; anything else (a vector
 * load, a read-modify-write, an instruction this table does not know) is
 * reported as unknown and mmio.c single-steps it instead. The memory
 * operand's address is never computed: the fault reports it.
 *
 * What each opcode does is one row of g_efasim_x86_ops; the decoder only
 * walks prefixes, the opcode, ModRM, SIB, displacement and immediate.
 */
#include <stddef.h>
#include <string.h>

#include "x86.h"

struct x86_op {
    uint8_t map; /* 0: one-byte opcode, 1: 0F xx */
    uint8_t opcode;
    int8_t modrm_reg; /* -1: reg names a register operand; 0..7: an opcode extension */
    uint8_t kind;     /* enum efasim_x86_kind */
    uint8_t mem_size; /* bytes read or written; 0: the operand size */
    uint8_t reg_size; /* register size for loads; 0: the operand size */
    uint8_t imm_size; /* immediate bytes; 0xff: the operand size, at most 4 */
};

/* The instructions a provider uses on doorbells and completion entries. */
static const struct x86_op g_efasim_x86_ops[] = {
    {0, 0x88, -1, EFASIM_X86_STORE_REG, 1, 1, 0},   /* mov m8, r8 */
    {0, 0x89, -1, EFASIM_X86_STORE_REG, 0, 0, 0},   /* mov m, r */
    {0, 0xc6, 0, EFASIM_X86_STORE_IMM, 1, 0, 1},    /* mov m8, imm8 */
    {0, 0xc7, 0, EFASIM_X86_STORE_IMM, 0, 0, 0xff}, /* mov m, imm32 (sign-extended) */
    {0, 0x8a, -1, EFASIM_X86_LOAD, 1, 1, 0},        /* mov r8, m8 */
    {0, 0x8b, -1, EFASIM_X86_LOAD, 0, 0, 0},        /* mov r, m */
    {1, 0xb6, -1, EFASIM_X86_LOAD_ZX, 1, 0, 0},     /* movzx r, m8 */
    {1, 0xb7, -1, EFASIM_X86_LOAD_ZX, 2, 0, 0},     /* movzx r, m16 */
    {1, 0xbe, -1, EFASIM_X86_LOAD_SX, 1, 0, 0},     /* movsx r, m8 */
    {1, 0xbf, -1, EFASIM_X86_LOAD_SX, 2, 0, 0},     /* movsx r, m16 */
};

static const struct x86_op *op_find(uint8_t map, uint8_t opcode, uint8_t modrm)
{
    for (size_t i = 0; i < sizeof(g_efasim_x86_ops) / sizeof(g_efasim_x86_ops[0]); i++) {
        const struct x86_op *op = &g_efasim_x86_ops[i];

        if (op->map == map && op->opcode == opcode &&
            (op->modrm_reg < 0 || op->modrm_reg == ((modrm >> 3) & 7)))
            return op;
    }
    return NULL;
}

bool efasim_x86_decode(const uint8_t *code, size_t avail, struct efasim_x86_insn *insn_p)
{
    struct efasim_x86_insn insn = {.kind = EFASIM_X86_UNKNOWN};
    unsigned operand_size = 4, pos = 0, imm_size;
    uint8_t rex = 0, map = 0, opcode, modrm, mod, rm;
    const struct x86_op *op;

    if (avail > 15)
        avail = 15;
    /* Legacy prefixes: operand size, segment overrides. Others (lock, rep) are not ours. */
    for (; pos < avail; pos++) {
        uint8_t b = code[pos];

        if (b == 0x66)
            operand_size = 2;
        else if (b != 0x2e && b != 0x3e && b != 0x26 && b != 0x36 && b != 0x64 && b != 0x65)
            break;
    }
    if (pos < avail && (code[pos] & 0xf0) == 0x40)
        rex = code[pos++];
    if (rex & 0x08)
        operand_size = 8;
    if (pos >= avail)
        return false;
    opcode = code[pos++];
    if (opcode == 0x0f) {
        if (pos >= avail)
            return false;
        map = 1;
        opcode = code[pos++];
    }
    if (pos >= avail)
        return false;
    modrm = code[pos++];
    mod = modrm >> 6;
    rm = modrm & 7;
    if (mod == 3)
        return false; /* a register operand: no memory access to emulate */
    op = op_find(map, opcode, modrm);
    if (!op)
        return false;
    if (rm == 4) { /* SIB */
        if (pos >= avail)
            return false;
        if (mod == 0 && (code[pos] & 7) == 5)
            pos += 4; /* no base: disp32 */
        pos++;
    }
    if (mod == 1)
        pos += 1;
    else if (mod == 2 || (mod == 0 && rm == 5))
        pos += 4; /* disp32, or RIP-relative */
    insn.mem_size = op->mem_size ? op->mem_size : (uint8_t)operand_size;
    insn.reg_size = op->reg_size ? op->reg_size : (uint8_t)operand_size;
    imm_size = op->imm_size == 0xff ? (operand_size > 4 ? 4 : operand_size) : op->imm_size;
    if (pos + imm_size > avail)
        return false;
    insn.imm = 0;
    for (unsigned i = 0; i < imm_size; i++)
        insn.imm |= (uint64_t)code[pos + i] << (8 * i);
    if (imm_size && imm_size < 8 && (insn.imm >> (8 * imm_size - 1)) & 1)
        insn.imm |= ~0ull << (8 * imm_size); /* immediates are sign-extended */
    pos += imm_size;
    insn.kind = op->kind;
    insn.reg = (uint8_t)(((modrm >> 3) & 7) | ((rex & 0x04) ? 8 : 0));
    /* Without REX, byte registers 4..7 are AH, CH, DH, BH. */
    insn.high8 = insn.reg_size == 1 && !rex && insn.reg >= 4 && insn.reg <= 7;
    if (insn.high8)
        insn.reg -= 4;
    insn.len = (uint8_t)pos;
    *insn_p = insn;
    return true;
}
