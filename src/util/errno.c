/* Strings for efarm's error codes (see efarm_errno.h). */
#include "efarm_errno.h"

#include <string.h>

static const char *const g_efarm_error_messages[] = {
#define EFARM_ERR_MSG_(name, msg) [EFARM_ERR_##name - EFARM_ERR_BASE_ - 1] = msg,
    EFARM_ERROR_LIST(EFARM_ERR_MSG_)
#undef EFARM_ERR_MSG_
};

static const char *const g_efarm_error_names[] = {
#define EFARM_ERR_NAME_(name, msg) [EFARM_ERR_##name - EFARM_ERR_BASE_ - 1] = #name,
    EFARM_ERROR_LIST(EFARM_ERR_NAME_)
#undef EFARM_ERR_NAME_
};

static int efarm_error_index(int err)
{
    int code = -err;

    if (code > EFARM_ERR_BASE_ && code < EFARM_ERR_END_)
        return code - EFARM_ERR_BASE_ - 1;
    return -1;
}

const char *efarm_strerror(int err)
{
    int idx = efarm_error_index(err);

    if (err == 0)
        return "success";
    if (idx >= 0)
        return g_efarm_error_messages[idx];
    if (err < 0)
        return strerror(-err);
    return "unknown error";
}

const char *efarm_strerror_name(int err)
{
    int idx = efarm_error_index(err);

    if (err == 0)
        return "OK";
    if (idx >= 0)
        return g_efarm_error_names[idx];
    if (err < 0) {
#ifdef __GLIBC__
        const char *name = strerrorname_np(-err);
        if (name)
            return name;
#endif
    }
    return "EUNKNOWN";
}
