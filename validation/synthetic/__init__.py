"""The synthetic workloads the harnesses plant slowdowns in. The harnesses copy these files into
their work directories, where round processes import them as top-level modules."""
