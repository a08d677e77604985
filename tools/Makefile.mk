# tools: efarm-pktdump, the protocol v4 dissector.
bin_PROGRAMS += tools/efarm-pktdump
tools_efarm_pktdump_SOURCES = tools/efarm-pktdump.c tools/json.c tools/json.h
tools_efarm_pktdump_LDADD = libefarm.la

# efasim-info: efasim's knob table and devices.
bin_PROGRAMS += tools/efasim-info
tools_efasim_info_SOURCES = tools/efasim-info.c
tools_efasim_info_CPPFLAGS = $(AM_CPPFLAGS) $(IBVERBS_CFLAGS)
tools_efasim_info_LDADD = src/efasim/libibverbs.la

# efarm-info: efarm's tunable table and the devices it sees.
bin_PROGRAMS += tools/efarm-info
tools_efarm_info_SOURCES = tools/efarm-info.c
tools_efarm_info_LDADD = libefarm.la

# efarm-pingpong: two-process ping-pong through the protocol engine, its user-facing example.
bin_PROGRAMS += tools/efarm-pingpong
tools_efarm_pingpong_SOURCES = tools/efarm_pingpong.c
tools_efarm_pingpong_LDADD = libefarm.la
