"""ONNX Runtime Web 1.30's WebNN execution provider, run over webnn-py's navigator.ml.

A real WebNN client: given the context the page created (ORT creating its own
needs WebGPU's GPUDevice: test_ort_creates_its_own_context_...), ORT reads
opSupportLimits() to decide which nodes WebNN takes, builds one MLGraph per
partition and runs it with createTensor / writeTensor / dispatch / readTensor.
Each model is exported from torch on the host and its reference outputs come
from onnxruntime (CPU) on the host, so the comparison is independent of us.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import browsers

from .conftest import call, open_page

ATOL = 1e-3

# ONNX operator types each model must put on WebNN (as ORT's graph has them after
# its level-1 rewrites, e.g. MatMul+Add → Gemm); the list for each model.
EXPECTED_OPS = {
    "mobilenet": {"Conv", "Clip", "Add", "GlobalAveragePool", "Gemm"},
    "transformer": {"MatMul", "Softmax", "LayerNormalization", "Erf", "Reshape", "Transpose"},
    "lstm": {"LSTM"},
    "embedding": {"Gather", "ReduceMean", "Gemm"},
}
MODELS = list(EXPECTED_OPS)

NODE_LINE = re.compile(r"GetSupportedNodes\] Operator type: \[(\w+)\] index: \[\d+\] name: \[([^\]]*)\] supported: \[(\d)\]")
CAPABILITY = re.compile(r"GetCapability\] WebNNExecutionProvider::GetCapability, number of partitions supported by "
                        r"WebNN: (\d+) number of nodes in the graph: (\d+) number of nodes supported by WebNN: (\d+)")
PLACEMENT = re.compile(r"(All nodes|Node\(s\)) placed on \[(\w+)\]\. Number of nodes: (\d+)")


def run(page, model, **options):
    """runModel() in the page (tests/ort/pages/ort_page.mjs) with the model's inputs."""
    args = {"url": f"/models/{model.path.name}", "verbose": True, "timeoutMs": 120_000,
            "inputs": {k: {"data": v.ravel().tolist(), "dims": list(v.shape), "type": str(v.dtype)}
                       for k, v in model.inputs.items()}}
    args.update(options)
    result = call(page, "runModel", args)
    assert not page.errors, page.errors
    return result


def placement(console: list[str]) -> dict:
    """What ORT's verbose log says about partitioning: per-node support, the capability line, placements."""
    text = "\n".join(console)
    nodes = [(op, name, flag == "1") for op, name, flag in NODE_LINE.findall(text)]
    capability = [tuple(map(int, m)) for m in CAPABILITY.findall(text)]
    placed = {ep: int(n) for _, ep, n in PLACEMENT.findall(text)}
    return {"nodes": nodes, "capability": capability, "placed": placed}


def assert_matches_reference(outputs: dict, model) -> None:
    assert set(outputs) == set(model.reference)
    for name, expected in model.reference.items():
        got = outputs[name]
        assert got["type"] == str(expected.dtype)
        assert got["dims"] == list(expected.shape), name
        np.testing.assert_allclose(np.asarray(got["data"], np.float32).reshape(expected.shape), expected,
                                   rtol=0, atol=ATOL, err_msg=f"{model.name}: output {name}")


@pytest.mark.parametrize("name", MODELS)
def test_model_runs_entirely_on_webnn(ort_page, exported, name):
    model = exported(name)
    result = run(ort_page, model)
    assert_matches_reference(result["outputs"], model)
    assert all(o["location"] == "cpu" for o in result["outputs"].values())

    # No silent fallback: every node ORT considered was supported, one partition
    # took them all, and the session placed every node on the WebNN EP.
    seen = placement(result["console"])
    assert seen["nodes"], "ORT printed no per-node support lines (is logSeverityLevel 0?)"
    unsupported = [(op, node) for op, node, ok in seen["nodes"] if not ok]
    assert not unsupported, f"nodes WebNN did not take: {unsupported}"
    assert EXPECTED_OPS[name] <= {op for op, _, _ in seen["nodes"]}
    assert seen["capability"] == [(1, len(seen["nodes"]), len(seen["nodes"]))]
    assert list(seen["placed"]) == ["WebNNExecutionProvider"], seen["placed"]
    assert "All nodes placed on [WebNNExecutionProvider]" in "\n".join(result["console"])

    # ...and the graph really ran on navigator.ml.
    calls = result["webnn"]
    assert calls["MLContext.opSupportLimits"]["count"] >= 1
    assert calls["MLGraphBuilder.build"]["count"] == 1
    assert calls["MLContext.dispatch"]["count"] == 1
    assert set(calls["MLContext.dispatch"]["keys"]) == set(model.inputs) | set(model.reference)
    graph_input_types = {str(v.dtype) for v in model.inputs.values()}
    assert set(calls["MLGraphBuilder.input"]["dataTypes"]) == graph_input_types


@pytest.mark.parametrize("name", MODELS)
def test_outputs_stay_in_ml_tensors(ort_page, exported, name):
    """preferredOutputLocation 'ml-tensor': ORT hands back our MLTensors; read back, they hold the results."""
    model = exported(name)
    result = run(ort_page, model, verbose=False, outputLocation="ml-tensor")
    for out_name, out in result["outputs"].items():
        assert out["location"] == "ml-tensor", out_name
        assert out["isMLTensor"] is True, out_name
        assert out["mlTensorShape"] == list(model.reference[out_name].shape)
        assert out["mlTensorDataType"] == str(model.reference[out_name].dtype)
    assert_matches_reference(result["outputs"], model)
    assert "MLContext.readTensor" in result["webnn"]


def test_partitioning_follows_op_support_limits(ort_page, exported):
    """Control: when opSupportLimits() lists no data type for softmax and
    layerNormalization, exactly those nodes leave WebNN. So the all-WebNN
    placement above is ORT reading our limits, not ORT taking everything."""
    model = exported("transformer")
    result = run(ort_page, model, createOnly=True, hideOps=["softmax", "layerNormalization"])
    seen = placement(result["console"])
    unsupported = sorted({op for op, _, ok in seen["nodes"] if not ok})
    supported = {op for op, _, ok in seen["nodes"] if ok}
    assert unsupported == ["LayerNormalization", "Softmax"]
    assert {"MatMul", "Erf", "Transpose", "Reshape"} <= supported
    hidden_count = sum(1 for op, _, ok in seen["nodes"] if not ok)
    assert seen["placed"].get("CPUExecutionProvider") == hidden_count == 6
    assert "WebNNExecutionProvider" in seen["placed"]


def test_int64_inputs_follow_op_support_limits(ort_page, exported):
    """ORT asks opSupportLimits() whether int64 is supported: with our answer
    (yes) the graph input is int64 (test above); when the answer leaves int64
    out, ORT feeds int32 instead, and the model still runs entirely on WebNN."""
    model = exported("embedding")
    result = run(ort_page, model, hideTypes=["int64"])
    assert_matches_reference(result["outputs"], model)
    calls = result["webnn"]
    assert calls["MLGraphBuilder.input"]["dataTypes"] == ["int32"]
    assert "int64" not in calls["MLContext.createTensor"]["dataTypes"]
    seen = placement(result["console"])
    assert seen["nodes"] and all(ok for _, _, ok in seen["nodes"])
    assert list(seen["placed"]) == ["WebNNExecutionProvider"]


READ_INTO_WASM_MEMORY = """async ({shared, view}) => {
  const context = await navigator.ml.createContext();
  const tensor = await context.createTensor({dataType: "float32", shape: [2], readable: true, writable: true});
  context.writeTensor(tensor, new Float32Array([1.5, -2]));
  const memory = new WebAssembly.Memory({initial: 1, maximum: 1, shared});
  const target = new self[view](memory.buffer, 8, 8 / self[view].BYTES_PER_ELEMENT);
  try {
    await context.readTensor(tensor, target);
  } catch (e) {
    return e.name + ": " + e.message;
  }
  return Array.from(new Float32Array(memory.buffer, 8, 2));
}"""


def test_read_tensor_into_shared_wasm_memory(ort_page):
    """§8.3.5 with a Uint8Array over shared wasm memory (ORT's threaded build's heap)."""
    assert call(ort_page, READ_INTO_WASM_MEMORY, {"shared": True, "view": "Uint8Array"}) == [1.5, -2]


def test_read_tensor_into_an_int8_view_of_the_right_byte_length_is_read_and_reported(browser, ort_server):
    """ORT 1.30 reads a partition's float32 output with an Int8Array over its heap
    (emscripten's typed_memory_view of char*). §8.3.5 step 6 ("validate buffer with
    descriptor") takes only a Uint8Array or the matching view type; Chromium checks only
    the byte length (its element type check is a TODO, crbug.com/378604909), and ORT never
    catches the rejection. By default the polyfill does what Chromium does -- the bytes
    are written as they are -- and says so once on the console, naming the call.
    (A fresh page: the module's shared page may have printed that line for ORT already.)"""
    with open_page(browser, f"{ort_server.url}/ort.html", "ortPageReady") as page:
        assert call(page, READ_INTO_WASM_MEMORY, {"shared": False, "view": "Int8Array"}) == [1.5, -2]
        assert call(page, READ_INTO_WASM_MEMORY, {"shared": True, "view": "Int8Array"}) == [1.5, -2]
        lines = [line for line in page.evaluate("self.ortConsole") if line.startswith("webnn-py: readTensor")]
        assert len(lines) == 1, lines                     # once per kind of mismatch
        assert lines[0].startswith("webnn-py: readTensor(tensor, outputData): an Int8Array cannot hold float32 data")
        assert "strictBufferTypes" in lines[0]
        assert call(page, READ_INTO_WASM_MEMORY, {"shared": False, "view": "Uint8Array"}) == [1.5, -2]
        # A wrong byte length is still the spec's TypeError.
        short = READ_INTO_WASM_MEMORY.replace("8 / self[view].BYTES_PER_ELEMENT", "4 / self[view].BYTES_PER_ELEMENT")
        assert call(page, short, {"shared": False, "view": "Int8Array"}).startswith("TypeError: ")
        assert not page.errors, page.errors


def test_strict_buffer_types_rejects_the_int8_view_as_the_2026_spec_says(browser, ort_server):
    with open_page(browser, f"{ort_server.url}/ort.html?strict", "ortPageReady") as page:
        result = call(page, READ_INTO_WASM_MEMORY, {"shared": False, "view": "Int8Array"})
        assert result.startswith("TypeError: ") and "Int8Array cannot hold float32" in result, result
        lines = [line for line in page.evaluate("self.ortConsole") if line.startswith("webnn-py: readTensor")]
        assert len(lines) == 1 and lines[0].startswith("webnn-py: readTensor(tensor, outputData): rejected"), lines
        assert call(page, READ_INTO_WASM_MEMORY, {"shared": False, "view": "Uint8Array"}) == [1.5, -2]
        assert not page.errors, page.errors


def _assert_split_run(result, model, cpu_ops):
    assert_matches_reference(result["outputs"], model)
    seen = placement(result["console"])
    assert sorted({op for op, _, ok in seen["nodes"] if not ok}) == cpu_ops
    assert {"WebNNExecutionProvider", "CPUExecutionProvider"} <= set(seen["placed"]), seen["placed"]
    calls = result["webnn"]
    assert calls["MLGraphBuilder.build"]["count"] >= 2          # one MLGraph per WebNN partition
    assert calls["MLContext.readTensor"]["count"] >= 1          # a partition's output read back for the CPU EP
    warnings = [line for line in result["console"] if line.startswith("webnn-py: readTensor(tensor, outputData)")]
    assert len(warnings) <= 1, warnings


def test_a_model_split_by_an_operator_webnn_lacks_runs_and_matches_onnxruntime(ort_page, exported):
    """Hardmax, which ORT's WebNN EP does not take, splits the graph: Gemm+Relu on WebNN,
    Hardmax on ORT's CPU EP, Mul+Add on WebNN again. It used to hang for good (the read of
    the first partition's output was rejected, issue 19 item 15)."""
    model = exported("hardmax")
    result = run(ort_page, model, timeoutMs=60_000)
    _assert_split_run(result, model, ["Hardmax"])


def test_partially_offloaded_model_runs(ort_page, exported):
    """The control experiment's split (softmax and layerNormalization hidden) now runs too."""
    model = exported("transformer")
    result = run(ort_page, model, timeoutMs=60_000, hideOps=["softmax", "layerNormalization"])
    _assert_split_run(result, model, ["LayerNormalization", "Softmax"])


def test_a_model_with_free_dimensions_runs_without_overrides(ort_page, exported):
    """A transformer exported with free batch and sequence dimensions and run without
    freeDimensionOverrides (transformers.js's default path, issue 19 item 15): ORT leaves
    the nodes of unknown shape on its CPU EP and gives WebNN the int64 shape arithmetic,
    whose partition outputs it reads back through an Int8Array. It used to hang there."""
    model = exported("transformer_dynamic")
    result = run(ort_page, model, timeoutMs=60_000)
    assert_matches_reference(result["outputs"], model)
    seen = placement(result["console"])
    assert {"WebNNExecutionProvider", "CPUExecutionProvider"} <= set(seen["placed"]), seen["placed"]
    calls = result["webnn"]
    assert "int64" in calls["MLGraphBuilder.input"]["dataTypes"] + calls["MLContext.createTensor"]["dataTypes"]
    assert calls["MLContext.readTensor"]["count"] >= 1


def test_members_from_other_drafts_are_ignored(ort_page, exported):
    """ORT passes dictionary members the 2026 IDL does not define (deviceType,
    dimensions, usage); WebIDL dictionaries ignore unknown members, so they are
    accepted and have no effect. Interfaces of other drafts stay absent."""
    result = run(ort_page, exported("mobilenet"), verbose=False)
    calls = result["webnn"]
    assert {"dimensions", "usage", "shape"} <= set(calls["MLContext.createTensor"]["keys"])
    assert {"dimensions", "shape"} <= set(calls["MLGraphBuilder.input"]["keys"])
    assert {"dimensions", "shape"} <= set(calls["MLGraphBuilder.constant"]["keys"])

    facts = call(ort_page, """async () => {
      const out = {};
      const context = await navigator.ml.createContext({deviceType: "cpu", numThreads: 4, powerPreference: undefined});
      out.context = context instanceof MLContext;
      const tensor = await context.createTensor({dataType: "float32", shape: [2, 3], dimensions: [7],
                                                 usage: 3, readable: true, writable: true});
      out.tensor = {shape: Array.from(tensor.shape), readable: tensor.readable, writable: tensor.writable,
                    usage: "usage" in tensor, dimensions: "dimensions" in tensor};
      const builder = new MLGraphBuilder(context);
      const x = builder.input("x", {dataType: "float32", shape: [2, 3], dimensions: [9, 9]});
      const c = builder.constant({dataType: "float32", shape: [3], dimensions: [1]}, new Float32Array([1, 2, 3]));
      out.inputShape = Array.from(x.shape);
      const graph = await builder.build({y: builder.add(x, c)});
      const y = await context.createTensor({dataType: "float32", shape: [2, 3], readable: true});
      context.writeTensor(tensor, new Float32Array([0, 1, 2, 3, 4, 5]));
      context.dispatch(graph, {x: tensor}, {y});
      out.y = Array.from(new Float32Array(await context.readTensor(y)));
      try {
        builder.input("z", {dataType: "float32", dimensions: [2]});
      } catch (e) {
        out.dimensionsWithoutShape = e.name;
      }
      out.absent = ["MLTensorUsage", "MLBuffer"].filter((n) => n in globalThis)
        .concat(["compute", "createBuffer"].filter((n) => n in MLContext.prototype));
      return out;
    }""")
    assert facts["context"] is True
    assert facts["tensor"] == {"shape": [2, 3], "readable": True, "writable": True, "usage": False, "dimensions": False}
    assert facts["inputShape"] == [2, 3]
    assert facts["y"] == [1, 3, 5, 4, 6, 8]
    assert facts["dimensionsWithoutShape"] == "TypeError"   # shape is required in the 2026 IDL
    assert facts["absent"] == []


def test_operations_returning_sequences_give_ml_operands(ort_page):
    """split() and lstm() return sequence<MLOperand> (ORT uses both): a JS array
    of MLOperand wrappers, each usable in the graph. (They failed through the
    shim before ORT exposed it: the bridge could not convert a list of operands.)"""
    facts = call(ort_page, """async () => {
      const context = await navigator.ml.createContext();
      const builder = new MLGraphBuilder(context);
      const x = builder.input("x", {dataType: "float32", shape: [2, 6]});
      const parts = builder.split(x, 3, {axis: 1});
      const lstm = builder.lstm(builder.input("s", {dataType: "float32", shape: [1, 1, 2]}),
                                builder.constant({dataType: "float32", shape: [1, 4, 2]}, new Float32Array(8)),
                                builder.constant({dataType: "float32", shape: [1, 4, 1]}, new Float32Array(4)), 1, 1);
      const graph = await builder.build({y: builder.sub(parts[2], parts[0])});
      const xt = await context.createTensor({dataType: "float32", shape: [2, 6], writable: true});
      const yt = await context.createTensor({dataType: "float32", shape: [2, 2], readable: true});
      context.writeTensor(xt, new Float32Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]));
      context.dispatch(graph, {x: xt}, {y: yt});
      return {
        isArray: Array.isArray(parts), length: parts.length,
        operands: parts.every((p) => p instanceof MLOperand), shapes: parts.map((p) => Array.from(p.shape)),
        lstm: lstm.map((p) => p instanceof MLOperand && Array.from(p.shape)),
        y: Array.from(new Float32Array(await context.readTensor(yt))),
      };
    }""")
    assert facts["isArray"] is True and facts["length"] == 3 and facts["operands"] is True
    assert facts["shapes"] == [[2, 2]] * 3
    assert facts["lstm"] == [[1, 1, 1], [1, 1, 1]]
    assert facts["y"] == [4, 4, 4, 4]


def test_ort_creates_its_own_context_only_where_the_engine_has_webgpu(ort_page, exported, browser):
    """Given no `context`, ORT-web creates one in createMLContext(), which starts with
    `options instanceof GPUDevice`: Chromium (WebGPU's GPUDevice) runs the model on a context
    ORT created with its own options (deviceType, which the 2026 IDL does not define: ignored);
    in Firefox ESR 153 and WebKitGTK 2.50, which have no WebGPU, that line is a ReferenceError
    and the session is not created. The polyfill defines no GPUDevice (it would make WebGPU
    feature checks lie), so pages pass the context they created (README "Browsers"), as
    every other test here does."""
    model = exported("mobilenet")
    assert ort_page.evaluate("typeof GPUDevice") == ("function" if browser.engine == "chromium" else "undefined")
    if browser.engine == "chromium":
        result = run(ort_page, model, verbose=False, ortContext=True)
        assert_matches_reference(result["outputs"], model)
        assert "deviceType" in result["webnn"]["ML.createContext"]["keys"]
        return
    with pytest.raises(browsers.EvaluationError) as raised:
        run(ort_page, model, verbose=False, ortContext=True, createOnly=True)
    assert "GPUDevice" in str(raised.value), raised.value
