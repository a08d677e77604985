# src/netmod_efarm: see src/netmod_efarm/README.md (empty until its issue lands).
EXTRA_DIST += src/netmod_efarm/README.md
