"""What measures a benchmark's calls: one module per measure (the host's clock, the device's
events, CUDA graph replays, instruction counts under callgrind, profiles), each with what it
needs, its unit, what it records and what it cannot see; registry.py lists them in the order
they are asked. The machinery each uses lives in runs/ (a counted process, a profiled process)
and below; the plugin only wires an instrument to the ``perf`` fixture."""
