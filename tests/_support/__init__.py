"""What the tests share: message builders (`builders`), where the test data lives (`data`), the
edit strategies' generated conversations and replay checks (`editing`), and a local
OpenAI-compatible server (`openai_server`). Import them as ``tests._support.<module>``."""
