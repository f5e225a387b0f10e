"""Index adapters: the only code that knows a backend. A new backend is one new file here."""
