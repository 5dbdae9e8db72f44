"""The agent's LLM context as contextwm keeps it current: the active context (masking,
truncation, duplicate reads), the fact ledger, usage against the model's limit, and the
texts of a compaction. Pure logic: the calls that change it are in agent_loop."""
