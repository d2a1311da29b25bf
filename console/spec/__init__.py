"""What to run: flat options -> RunSpec, what the run form may offer, a model file's inputs, and a
stored run's spec to run it again."""
