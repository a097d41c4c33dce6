"""Adapters that plug reward-service into RL frameworks' own reward hooks."""
