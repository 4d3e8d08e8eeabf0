"""Studies: several trainings of an experiment turned into a table or figure of a paper."""
