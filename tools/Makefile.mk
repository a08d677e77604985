# tools: efarm-pktdump, the protocol v4 dissector (packets, captures, data logs).
bin_PROGRAMS += tools/efarm-pktdump
tools_efarm_pktdump_SOURCES = tools/efarm-pktdump.c tools/json.c tools/json.h \
	tools/pktdump_streams.c tools/pktdump_streams.h
tools_efarm_pktdump_LDADD = libefarm.la

# The Wireshark dissector of EFARM_CAPTURE files and its generated packet table.
wiresharkdir = $(pkgdatadir)/wireshark
dist_wireshark_DATA = tools/efarm.lua tools/efarm_v4.lua

# Manual pages: the tools', and efarm(7) with every tunable (generated, see below).
dist_man_MANS = doc/man/efarm-info.1 doc/man/efarm-pktdump.1 doc/man/efarm-pingpong.1 \
	doc/man/efasim-info.1 doc/man/efarm.7

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

# efarm-config-gen: the files generated from efarm's tables (not installed).
noinst_PROGRAMS += tools/efarm-config-gen
tools_efarm_config_gen_SOURCES = tools/efarm-config-gen.c
tools_efarm_config_gen_LDADD = libefarm.la

# `make config-gen` rewrites them; `make check-config-gen` fails when one is stale.
CONFIG_GEN = src/netmod_efarm/efarm_cvars.h:--cvars doc/TUNABLES.md:--markdown \
	tools/efarm_v4.lua:--lua doc/man/efarm.7:--man
config-gen: tools/efarm-config-gen
	@for g in $(CONFIG_GEN); do \
		tools/efarm-config-gen $${g#*:} > $(top_srcdir)/$${g%%:*} || exit 1; \
		echo "config-gen: wrote $${g%%:*}"; done
check-config-gen: tools/efarm-config-gen
	@for g in $(CONFIG_GEN); do \
		tools/efarm-config-gen $${g#*:} | diff -u $(top_srcdir)/$${g%%:*} - || \
		{ echo "check-config-gen: $${g%%:*} is stale: run make config-gen" >&2; exit 1; }; \
		done; echo "check-config-gen: efarm_cvars.h, TUNABLES.md, efarm_v4.lua and efarm.7 match the tables"
.PHONY: config-gen check-config-gen
