"""Pricing from litellm's offline table, and what a typo suggests."""

from __future__ import annotations

import pytest

from harpe_lab.errors import StrategyError
from harpe_lab.models import Pricing, suggest_models

# a small table shaped like litellm's model_cost, with the distractors the field has
TABLE = {
    "azure/eu/gpt-4o": {"input_cost_per_token": 2.75e-6, "litellm_provider": "azure"},
    "azure/gpt-4o": {"input_cost_per_token": 2.5e-6, "litellm_provider": "azure"},
    "gpt-4o": {"input_cost_per_token": 2.5e-6, "litellm_provider": "openai"},
    "gpt-4o-mini": {"input_cost_per_token": 1.5e-7, "litellm_provider": "openai"},
    "gpt-4": {"input_cost_per_token": 3e-5, "litellm_provider": "openai"},
    "anthropic/claude-sonnet-4-5": {"input_cost_per_token": 3e-6, "litellm_provider": "anthropic"},
    "gpt-4o-unpriced": {"litellm_provider": "openai"},
    "sample_spec": {"input_cost_per_token": 0.0, "litellm_provider": "openai"},
}


class TestSuggestions:
    def test_exact_provider_match_first(self):
        assert suggest_models("openai/gpt4o", TABLE)[0] == "openai/gpt-4o"

    def test_no_provider_gives_the_plain_name_first(self):
        got = suggest_models("gpt4o", TABLE)
        assert got[0] == "gpt-4o"
        assert got.index("azure/gpt-4o") < got.index("azure/eu/gpt-4o")  # region paths last

    def test_provider_prefix_kept_for_prefixed_keys(self):
        assert suggest_models("anthropic/claude-sonet-4-5", TABLE)[0] == "anthropic/claude-sonnet-4-5"

    def test_unpriced_entries_are_not_suggested(self):
        assert all("unpriced" not in s for s in suggest_models("openai/gpt-4o-unpriced", TABLE))

    def test_nothing_close(self):
        assert suggest_models("zzzz", TABLE) == []


class TestForModel:
    def test_known_model(self):
        p = Pricing.for_model("openai/gpt-4o")
        assert p.input > 0 and p.output > p.input and 0 < p.cache_read <= p.input

    def test_typo_suggests_the_obvious_name_first(self):
        with pytest.raises(StrategyError, match=r"no price for model 'openai/gpt4o'.*did you mean openai/gpt-4o, "):
            Pricing.for_model("openai/gpt4o")

    def test_every_suggestion_is_accepted(self):
        with pytest.raises(StrategyError) as info:
            Pricing.for_model("openai/gpt-4o-mni")
        names = str(info.value).split("did you mean ")[1].split("?")[0].split(", ")
        assert names[0] == "openai/gpt-4o-mini"
        for name in names:
            assert Pricing.for_model(name).input > 0

    @pytest.mark.parametrize("bad", ["", "   ", None])
    def test_not_a_name(self, bad):
        with pytest.raises(StrategyError, match="model must be a model name"):
            Pricing.for_model(bad)
