# src/device: see src/device/README.md (empty until its issue lands).
EXTRA_DIST += src/device/README.md
