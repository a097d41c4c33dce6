"""The framework contracts the server speaks: request bodies read into samples.

slime      SLIME's `{"prompt", "response", "label"}`, with routing from a label object
openrlhf   OpenRLHF's `{"query", "prompts", "labels"}` and its answer
group      the group endpoint's one prompt and its n answers
nemo_gym   NeMo Gym's verify requests, by environment, and the answers they get
responses_api  the Responses-API output NeMo Gym sends, read for its final message
"""
