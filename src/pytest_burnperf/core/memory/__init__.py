"""Memory per call: what a call allocated on its device, as figures (and, next, the verdict
on them). No pytest here."""
