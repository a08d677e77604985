# src/efasim: see src/efasim/README.md (empty until its issue lands).
EXTRA_DIST += src/efasim/README.md
