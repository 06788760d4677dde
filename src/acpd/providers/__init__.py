"""LLM providers behind one streaming interface; each is imported only when selected."""
