"""The language front end: Soufflé-subset text (lark grammar) to the rule IR."""
