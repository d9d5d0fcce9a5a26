"""New measures beyond accuracy: agreement, power, calibration and the bootstrap (pure Python)."""
