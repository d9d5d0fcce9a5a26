"""The numbers, in pure Python: the per-model summary (summary.py) and its metric declarations (metrics.py),
intervals and paired tests (proportions.py), pairs.json (pairs.py), agreement, power, calibration, bootstrap."""
