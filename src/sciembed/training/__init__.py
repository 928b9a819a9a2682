"""Training: the papers' losses (:mod:`.losses`); Trainer subclasses and recipes follow."""
