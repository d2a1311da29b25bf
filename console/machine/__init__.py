"""This machine as the console sees it: its targets, its stored machine cards (ceilings) and
their table, and the noise floor pooled from its recent measurements."""
