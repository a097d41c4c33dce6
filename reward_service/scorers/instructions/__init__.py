"""Instruction following: the `ifeval` and `ifbench` scorers (docs/instructions.md)."""
