"""Spark: DataFrame exchange, the Spark backend and its Reasoner (PySpark imported on use)."""
