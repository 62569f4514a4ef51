"""The README's Model Loader tables match the importers' registries
(tools/gen_loader_tables.py; `./dev gen` rewrites them)."""
from tools.gen_loader_tables import README, TABLES, render


def test_readme_loader_tables_are_current():
    readme = README.read_text(encoding="utf-8")
    assert render(readme) == readme, "README.md's Model Loader tables are stale: run ./dev gen"


def test_the_tflite_table_counts_every_builtin():
    from webnn_py.loader.tflite import builtins
    readme = README.read_text(encoding="utf-8")
    tflite = TABLES[0]
    body = readme[readme.index(tflite.begin):readme.index(tflite.end)]
    rows = [line for line in body.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    assert len(rows) == len(builtins.table())
    translated = sum(" | ✓ | " in row for row in rows)
    assert f"**{translated} of {len(rows)}**" in body
