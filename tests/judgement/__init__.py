"""Floor 5, judgement: findable facts, evaluation, compaction health, studies."""
