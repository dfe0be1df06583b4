"""Speed and memory at size: the scale curve (also on a two-node Ray cluster), the cost of a
change against a baseline, hashing throughput, driver and audit memory, the no-op rerun."""
