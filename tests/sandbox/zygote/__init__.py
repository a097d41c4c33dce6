"""The zygote sandbox with benign programs, a file per unit: runs, limits, isolation, its
life, its layers."""
