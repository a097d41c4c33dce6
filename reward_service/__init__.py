"""reward-service: a CPU-only HTTP reward service for RL post-training of LLMs."""

__version__ = "0.1.0"
