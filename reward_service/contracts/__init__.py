"""The framework contracts the server speaks: request bodies read into samples.

slime      SLIME's `{"prompt", "response", "label"}`, with routing from a label object
openrlhf   OpenRLHF's `{"query", "prompts", "labels"}` and its answer
"""
