/*
 * A shared library that releases memory for test_mem_hook_so.c: built twice,
 * once linked into the test (a DT_NEEDED loaded before the hook goes live)
 * and once as a module the test dlopens after the hook went live. Each
 * function only forwards, so its release reaches libc through this object's
 * own GOT, which the memory hook must have patched.
 */
#include <stdlib.h>
#include <sys/mman.h>

void *memhook_helper_malloc(size_t size);
void memhook_helper_free(void *ptr);
void *memhook_helper_realloc(void *ptr, size_t size);
int memhook_helper_munmap(void *addr, size_t len);

void *memhook_helper_malloc(size_t size)
{
    return malloc(size);
}

void memhook_helper_free(void *ptr)
{
    free(ptr);
}

void *memhook_helper_realloc(void *ptr, size_t size)
{
    return realloc(ptr, size);
}

int memhook_helper_munmap(void *addr, size_t len)
{
    return munmap(addr, len);
}
