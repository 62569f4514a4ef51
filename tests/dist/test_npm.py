"""The npm package: `npm pack` (its prepack builds dist/ offline) makes a tarball that installs
into a scratch project, and pages served from that project's node_modules/webnn-py/dist/ work by
a script tag, a side-effect import by path and a side-effect import of the bare name through an
import map built from the installed package.json's `exports`."""
import base64
import hashlib
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.dist import EXPECTED, graph_page, plain_http_server, run_page

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tarball(dist, tmp_path_factory) -> Path:
    if not shutil.which("npm"):
        pytest.skip("npm is missing: run ./dev setup")
    out = tmp_path_factory.mktemp("pack")
    subprocess.run(["npm", "pack", "--pack-destination", str(out)], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (path,) = out.glob("webnn-py-*.tgz")
    return path


@pytest.fixture(scope="module")
def project(tarball, tmp_path_factory) -> Path:
    """A scratch project with the tarball installed (offline: the package has no dependencies)."""
    root = tmp_path_factory.mktemp("project")
    (root / "package.json").write_text(json.dumps({"name": "scratch", "version": "1.0.0", "private": True}))
    subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball)], cwd=root, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return root


@pytest.fixture(scope="module")
def manifest(project) -> dict:
    """The installed package's manifest (the repo's dist/ may be rebuilt meanwhile)."""
    return json.loads((project / "node_modules" / "webnn-py" / "dist" / "manifest.json").read_text())


def test_the_tarball_holds_dist_only(tarball, manifest):
    with tarfile.open(tarball) as tar:
        names = {n.removeprefix("package/") for n in tar.getnames()}
    assert "package.json" in names and "dist/webnn-polyfill.js" in names
    assert f"dist/{manifest['pyodide']}pyodide.asm.wasm" in names
    assert {n for n in names if not n.startswith("dist/")} <= {"package.json", "README.md", "LICENSE"}, names
    assert "LICENSE" in names and "dist/LICENSE" in names


def test_the_installed_package_describes_its_entry_points(project, manifest):
    package = json.loads((project / "node_modules" / "webnn-py" / "package.json").read_text())
    assert "dependencies" not in package and package.get("private") is not True
    entry = "dist/webnn-polyfill.js"
    for field in ("main", "module", "browser", "unpkg", "jsdelivr"):
        assert package[field] == entry, field
    assert package["exports"]["."]["default"] == "./" + entry
    installed = project / "node_modules" / "webnn-py"
    assert (installed / package["types"]).is_file()
    assert (installed / package["exports"]["."]["types"]).is_file()
    entry = (installed / "dist" / "webnn-polyfill.js").read_bytes()
    assert manifest["integrity"] == "sha384-" + base64.b64encode(hashlib.sha384(entry).digest()).decode()


def test_pages_served_from_node_modules(project, manifest, browser):
    package = json.loads((project / "node_modules" / "webnn-py" / "package.json").read_text())
    script = "/node_modules/webnn-py/" + package["exports"]["."]["default"].removeprefix("./")
    (project / "tag.html").write_text(graph_page(script, "tag", manifest["integrity"]))
    (project / "import.html").write_text(graph_page(script, "import"))
    import_map = f'<script type="importmap">{json.dumps({"imports": {"webnn-py": script}})}</script>\n'
    (project / "bare.html").write_text(import_map + graph_page("webnn-py", "import"))
    with plain_http_server(project) as url:
        for page in ("tag.html", "import.html", "bare.html"):
            outcome = run_page(browser, f"{url}/{page}")
            assert "error" not in outcome, (page, outcome["error"])
            assert outcome["values"] == EXPECTED, page
            assert f"{url}/node_modules/webnn-py/dist/{manifest['pyodide']}pyodide.asm.wasm" in outcome["resources"]


def test_typescript_finds_the_types_through_the_package(project, tmp_path):
    """`import "webnn-py"` in a TypeScript module resolves the package's `exports` types and
    brings navigator.ml and the interfaces into scope; a misuse still fails."""
    tsc = REPO / "node_modules" / ".bin" / "tsc"
    if not tsc.is_file():
        pytest.skip("typescript is missing: run ./dev setup")
    (project / "use.ts").write_text(
        'import "webnn-py";\n'
        "export async function sum(): Promise<MLOperand> {\n"
        "  const builder = new MLGraphBuilder(await navigator.ml.createContext());\n"
        '  return builder.add(builder.input("a", { dataType: "float32", shape: [1] }),\n'
        '                     builder.input("b", { dataType: "float32", shape: [1] }));\n'
        "}\n")
    (project / "misuse.ts").write_text('import "webnn-py";\nexport const x: MLOperandDataType = "float64";\n')
    for name, ok in (("use.ts", True), ("misuse.ts", False)):
        config = {"compilerOptions": {"strict": True, "noEmit": True, "target": "es2022", "module": "esnext",
                                      "moduleResolution": "bundler", "lib": ["es2022", "dom"], "types": []},
                  "files": [name]}
        (project / "tsconfig.json").write_text(json.dumps(config))
        result = subprocess.run([str(tsc), "-p", "tsconfig.json"], cwd=project, capture_output=True, text=True)
        assert (result.returncode == 0) == ok, (name, result.stdout)
        if not ok:
            assert "misuse.ts(2," in result.stdout and "float64" in result.stdout, result.stdout
