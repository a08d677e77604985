# tools: efarm-pktdump, the protocol v4 dissector.
bin_PROGRAMS += tools/efarm-pktdump
tools_efarm_pktdump_SOURCES = tools/efarm-pktdump.c tools/json.c tools/json.h
tools_efarm_pktdump_LDADD = libefarm.la
