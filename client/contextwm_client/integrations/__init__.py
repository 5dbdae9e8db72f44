"""Adapters that make contextwm the memory of agent frameworks: thin layers over the public
client, one module per framework, each installed with its extra of the client package
(`pip install "contextwm-client[langchain]"`, `[openai-agents]`, `[llama-index]`)."""
