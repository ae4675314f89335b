"""What a same-session comparison compares and where its other code comes from: reference
environments, their overlay, the reference --perf-against auto picks."""
