"""The verdict and what it rests on: the statistics, the between-run model, comparability,
the cause of an abstention, the outcome of a test, what a run judged. No pytest here."""
