"""The agent's model: a litellm model name and its call arguments, called through
`harpe_lab.models` with retries left to the loop."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..errors import AgentError
from ..messages import AssistantMessage, Rendered, Usage, strip_harpe_keys, to_openai
from ..models import reply_of, route, secrets_of, send, usage_of

__all__ = ["Brain"]

_RESERVED = ("model", "messages", "tools", "max_tokens", "num_retries", "max_retries", "stream")


class Brain:
    """A model reached through litellm: ``Brain("openai/gpt-4o-mini", api_key=...)``.

    ``litellm_kwargs`` go to every ``litellm.completion`` call (``api_base``, ``api_key``,
    ``temperature``, ``timeout``, ...). Retries are the engine's (`ask`'s ``max_retries``),
    so litellm's and the OpenAI client's are switched off. The API key is never logged
    nor shown in ``repr``.
    """

    def __init__(self, model: str, **litellm_kwargs: Any) -> None:
        if not isinstance(model, str) or not model.strip():
            raise AgentError(f"model must be a litellm model name such as 'openai/gpt-4o-mini', got {model!r}")
        bad = [k for k in litellm_kwargs if k in _RESERVED]
        if bad:
            raise AgentError(
                f"Brain does not take {', '.join(sorted(bad))}: the model is the first argument, messages "
                "and tools come from ask, max_tokens is ask(max_output_tokens=...), retries are "
                "ask(max_retries=...), and replies are not streamed"
            )
        self.model = model
        self.kwargs = dict(litellm_kwargs)
        self._provider: tuple[str, str] | None = None

    @property
    def provider(self) -> str:
        """The provider litellm routes to (``"openai"``, ``"anthropic"``, ...)."""
        return self._route()[0]

    @property
    def model_name(self) -> str:
        """The model name without the provider prefix, as Harpe logs it."""
        return self._route()[1]

    def _route(self) -> tuple[str, str]:
        if self._provider is None:
            self._provider = route(self.model, api_base=self.kwargs.get("api_base"),
                                   custom_llm_provider=self.kwargs.get("custom_llm_provider"))
        return self._provider

    def complete(self, rendered: Rendered, *, tools: Sequence[Mapping[str, Any]] = (),
                 max_output_tokens: int = 8192) -> tuple[AssistantMessage, Usage]:
        """One model call: send ``rendered`` (and ``tools``), return the reply and its usage
        (zeros when the provider reported none). litellm's exceptions propagate; `ask`
        classifies them (`harpe_lab.models.classify`)."""
        response = send(self.model, strip_harpe_keys(to_openai(rendered)), tools=tools,
                        max_tokens=max_output_tokens, **self.kwargs)
        model = str(getattr(response, "model", "") or self.model_name)
        usage = usage_of(response, provider=self.provider, model=model)
        return reply_of(response), usage or Usage(0, provider=self.provider, model=model)

    def _secrets(self) -> list[str]:
        """Credentials that must never reach a journal (`harpe_lab.models.secrets_of`)."""
        return secrets_of(self.kwargs)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={'***' if str(v) in self._secrets() else v!r}" for k, v in self.kwargs.items())
        return f"Brain({self.model!r}{', ' + shown if shown else ''})"
