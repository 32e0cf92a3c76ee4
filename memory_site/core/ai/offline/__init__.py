"""The offline LLM provider: extractive summaries, rule-based facts and rule-based chat."""
