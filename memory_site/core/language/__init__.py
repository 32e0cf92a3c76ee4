"""Language rules the pipeline needs whatever the LLM provider: sentences, words and kinship."""
