"""The counted measure: instructions per call, the counts key, the calls counted, the cycle
estimate. No pytest here."""
