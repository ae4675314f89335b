"""A benchmark's settings and the run's options and mode: what a run was asked to do. No pytest here."""
