"""The Python half of the browser bridge; only imported inside Pyodide."""
