"""What machine this is and what it is doing: hardware identity and class, machine ids, the host
state around each benchmark, the reference probe, NVML, signal handling.

The bottom layer: imports nothing else of this package.
"""
