"""AutoGen's model contexts (`harpe_lab.strategies.autogen`)."""
