/* efarm's tunable table: defaults, overrides, bad values, the printed table. */
#include <stdio.h>
#include <stdlib.h>

#include "efarm_config.h"
#include "efarm_errno.h"
#include "efarm_test.h"

EFARM_TEST(config_defaults)
{
    const struct efarm_config *c;

    unsetenv("EFARM_DEVICE");
    unsetenv("EFARM_MR_CACHE");
    c = efarm_config();
    EXPECT_TRUE(!strcmp(c->device, "auto"));
    EXPECT_TRUE(c->mr_cache);
    EXPECT_EQ(c->mr_cache_max_entries, 0);
    EXPECT_TRUE(!*c->iface);
}

EFARM_TEST(config_overrides_and_bad_values)
{
    const struct efarm_config *c;

    setenv("EFARM_DEVICE", "sim", 1);
    setenv("EFARM_MR_CACHE", "0", 1);
    setenv("EFARM_MR_CACHE_MAX_ENTRIES", "1024", 1);
    setenv("EFARM_MR_CACHE_MAX_BYTES", "lots", 1); /* refused: the default stays */
    setenv("EFARM_NIC_VERBOSE", "maybe", 1);       /* refused */
    c = efarm_config();
    EXPECT_TRUE(!strcmp(c->device, "sim"));
    EXPECT_TRUE(!c->mr_cache);
    EXPECT_EQ(c->mr_cache_max_entries, 1024);
    EXPECT_EQ(c->mr_cache_max_bytes, 0);
    EXPECT_TRUE(!c->nic_verbose);
}

EFARM_TEST(config_table_printed_whole)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    int lines = 0;

    EXPECT_TRUE(out != NULL);
    efarm_config_print(out);
    fclose(out);
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
#define CONFIG_COUNT_(name, member, kind, def, why) +1
    EXPECT_EQ(lines, 1 + (0 EFARM_CONFIG_LIST(CONFIG_COUNT_))); /* the header, one per tunable */
#undef CONFIG_COUNT_
#define CONFIG_PRINTED_(name, member, kind, def, why) \
    EXPECT_TRUE(strstr(text, "EFARM_" #name " ") != NULL);
    EFARM_CONFIG_LIST(CONFIG_PRINTED_)
#undef CONFIG_PRINTED_
    free(text);
}
