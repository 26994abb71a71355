"""The OpenAI Agents SDK's tool-output trimming (`harpe_lab.strategies.trimming`)."""
