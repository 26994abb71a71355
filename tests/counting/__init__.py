"""Floor 2, counting and models: token counters, pricing, the one door to litellm."""
