"""Helpers shared by the tests: tables, assertions, the pyarrow oracle, stores
and Hypothesis strategies. Tests import them as ``from support.NAME import ...``
(pyproject.toml puts tests/ on the import path)."""
