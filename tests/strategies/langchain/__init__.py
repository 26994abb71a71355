"""LangChain's middleware, native (`harpe_lab.strategies.langchain`) and against LangChain's own."""
