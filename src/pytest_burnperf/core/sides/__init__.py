"""The verdicts judged beside a benchmark's time or counts verdict (memory per call): what one
is, and the registry of them."""
