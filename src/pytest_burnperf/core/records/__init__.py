"""What a run keeps: results, stored baselines, per-environment summaries, profiles and
roofline figures. No pytest here."""
