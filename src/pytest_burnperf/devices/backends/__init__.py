"""One module per array library behind the Device protocol (devices/base.py): numpy, torch,
cupy, OpenCL, Vulkan and plain Python."""
