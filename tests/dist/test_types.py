"""types/webnn.d.ts (tools/gen_types.py from idl/): current, complete, and strict enough that
`tsc --strict --noEmit` accepts a sample touching every interface and rejects wrong code."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tools import gen_types
from tools.gen_bindings import GenerationError, webidl

REPO = Path(__file__).resolve().parents[2]
TSC = REPO / "node_modules" / ".bin" / "tsc"
SAMPLES = Path(__file__).parent / "types"
DECLARATIONS = REPO / "types" / "webnn.d.ts"


def tsc(tmp_path: Path, *files: Path) -> subprocess.CompletedProcess:
    if not TSC.is_file() or not shutil.which("node"):
        pytest.skip("typescript is missing: run ./dev setup")
    config = {"compilerOptions": {"strict": True, "noEmit": True, "target": "es2022", "lib": ["es2022", "dom"],
                                  "types": []},
              "files": [str(f) for f in files]}
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    return subprocess.run([str(TSC), "-p", str(tmp_path / "tsconfig.json")], capture_output=True, text=True)


def test_the_declarations_are_current():
    assert DECLARATIONS.read_text(encoding="utf-8") == gen_types.generate(), "run ./dev gen"


def test_the_sample_touches_every_interface_and_compiles(tmp_path):
    interfaces = re.findall(r"^  var (\w+): \{$", DECLARATIONS.read_text(encoding="utf-8"), re.M)
    assert {"ML", "MLContext", "MLGraphBuilder", "MLOperand", "MLGraph", "MLTensor", "MLModel",
            "MLModelLoader"} == set(interfaces)
    sample = (SAMPLES / "sample.ts").read_text(encoding="utf-8")
    assert [name for name in interfaces if not re.search(rf"\b{name}\b", sample)] == []
    assert "navigator.ml" in sample and "builder.loop(" in sample
    result = tsc(tmp_path, DECLARATIONS, SAMPLES / "sample.ts")
    assert result.returncode == 0, result.stdout + result.stderr


def test_wrong_code_fails_on_exactly_the_marked_lines(tmp_path):
    wrong = SAMPLES / "wrong.ts"
    marked = {i for i, line in enumerate(wrong.read_text(encoding="utf-8").splitlines(), 1) if line.endswith("// error")}
    result = tsc(tmp_path, DECLARATIONS, wrong)
    assert result.returncode != 0
    reported = {int(n) for n in re.findall(r"wrong\.ts\((\d+),\d+\): error", result.stdout)}
    assert reported == marked, result.stdout


@pytest.mark.parametrize("idl_type", ["ObservableArray<long>", "undefined", "Int128Array"])
def test_an_idl_type_without_a_mapping_stops_generation(idl_type):
    mapper = gen_types.TypeMapper(type("Model", (), {"defined_in": {}})())
    with pytest.raises(GenerationError, match="mapping"):
        mapper.ts(webidl.parse_type(idl_type))


def test_an_idl_construct_without_a_mapping_stops_generation():
    entry = {"kind": "interface", "inherits": None, "constants": [("LIMIT", "long", 3)], "attributes": [],
             "operations": {}, "constructors": []}
    with pytest.raises(GenerationError, match="constants"):
        gen_types.render_interface(gen_types.TypeMapper(type("Model", (), {"defined_in": {}})()), "X", entry, [])


def test_dist_ships_the_declarations(dist):
    assert (dist / "webnn-polyfill.d.ts").read_bytes() == DECLARATIONS.read_bytes()
