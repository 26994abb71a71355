"""OpenAI's own context management: the Agents SDK's tool-output trimming
(`harpe_lab.strategies.openai.agents_sdk`) and Realtime's retention ratio (`.realtime`)."""
