"""What the tests share besides fixtures: the small test spec, files in benchmarks' released formats, hand-made
result rows. Imported as `helpers.<module>` (pytest puts `tests/` on the path); fixtures and hooks stay in
`tests/conftest.py`."""
