"""Reading OpenVINO IR (v10/v11): the .xml's layers and edges, and the .bin's constants.

The XML comes from the page, so it is untrusted: a document type declaration
(and with it every entity, the "billion laughs" and external-entity attacks) is
refused before the parser sees the text, and every Const's offset and size into
the weights are checked against the .bin's length and against what its shape
and element type need. Malformed input is a DataError naming the layer.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from ...base.descriptor import MAX_DIMENSION, MAX_TENSOR_BYTE_LENGTH
from ...base.errors import DataError, NotSupportedError

# IR element_type -> (numpy type of the stored data, MLOperandDataType it becomes).
# WebNN has no boolean type: booleans become uint8 0/1 operands.
ELEMENT_TYPES = {
    "f32": (np.float32, "float32"),
    "f16": (np.float16, "float16"),
    "i32": (np.int32, "int32"),
    "i64": (np.int64, "int64"),
    "u8": (np.uint8, "uint8"),
    "boolean": (np.uint8, "uint8"),     # one byte per element; non-zero is true
}

# Upper bounds that keep hostile files from exhausting memory through the
# structure itself (constants are bounded by the .bin they are read from).
MAX_RANK = 16
MAX_NESTING = 16

_DOCTYPE = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


@dataclass
class Port:
    id: int
    dims: tuple[int, ...] | None     # None: the port gives no dims; -1 for a dynamic dimension
    precision: str
    names: tuple[str, ...] = ()


@dataclass
class Layer:
    id: int
    name: str
    type: str
    version: str
    data: dict
    inputs: list[Port]
    outputs: list[Port]
    element: ET.Element              # for the Loop's port_map / back_edges / body
    where: str                       # "layer 5 'name' (Type)" or "... in the body of layer 3 ..."
    body: "Graph | None" = None


@dataclass
class Graph:
    layers: dict[int, Layer]
    order: list[int]                                     # layer ids in a topological order
    sources: dict[tuple[int, int], tuple[int, int]]      # (to layer, to port) -> (from layer, from port)
    where: str = ""                                      # "" for the model, "in the body of ..." for bodies
    loop_ids: list[int] = field(default_factory=list)


def parse(xml_bytes: bytes, weights: bytes) -> Graph:
    """The model's top-level graph, with every Loop's body parsed too."""
    if _DOCTYPE.search(xml_bytes):
        raise DataError("load: the OpenVINO IR contains a DOCTYPE or ENTITY declaration, which is refused "
                        "(entities could expand without bound or reach outside the file)")
    try:
        root = ET.fromstring(xml_bytes)
    except ET.ParseError as exc:
        raise DataError(f"load: the OpenVINO IR is not well-formed XML: {exc}") from None
    if root.tag != "net":
        raise DataError(f"load: the OpenVINO IR's root element is <{root.tag}>, not <net>")
    version = root.get("version")
    if version not in ("10", "11"):
        raise DataError(f"load: OpenVINO IR version {version!r} is not supported (10 and 11 are)")
    return _graph(root, weights, "", 0)


def _int(text, where: str, what: str) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        raise DataError(f"load: {where}: {what} {text!r} is not an integer") from None


def _ports(parent: ET.Element | None, where: str) -> list[Port]:
    if parent is None:
        return []
    ports = []
    for port in parent.findall("port"):
        dims = [d.text.strip() if d.text else "" for d in port.findall("dim")]
        if len(dims) > MAX_RANK:
            raise DataError(f"load: {where}: a port has rank {len(dims)}, more than {MAX_RANK}")
        values = []
        for d in dims:
            # "?" and "-1" mean a dynamic dimension; an interval "1..10" is dynamic too.
            values.append(-1 if d in ("?", "-1") or ".." in d else _int(d, where, "dimension"))
        names = tuple(n for n in (port.get("names") or "").split(",") if n)
        ports.append(Port(_int(port.get("id"), where, "port id"), tuple(values), port.get("precision", ""),
                          names))
    return ports


def _graph(net: ET.Element, weights: bytes, context: str, depth: int) -> Graph:
    if depth > MAX_NESTING:
        raise DataError(f"load: Loop bodies are nested more than {MAX_NESTING} deep")
    layers_el = net.find("layers")
    edges_el = net.find("edges")
    if layers_el is None or edges_el is None:
        raise DataError(f"load: the graph{context} lacks <layers> or <edges>")
    layers: dict[int, Layer] = {}
    for el in layers_el.findall("layer"):
        lid = _int(el.get("id"), f"a layer{context}", "id")
        where = f"layer {lid} {el.get('name', '')!r} ({el.get('type', '?')}){context}"
        if lid in layers:
            raise DataError(f"load: {where}: the layer id is used twice")
        data_el = el.find("data")
        layer = Layer(lid, el.get("name", ""), el.get("type", ""), el.get("version", ""),
                      dict(data_el.attrib) if data_el is not None else {},
                      _ports(el.find("input"), where), _ports(el.find("output"), where), el, where)
        layers[lid] = layer
        if layer.type == "Const":
            layer.data["__value__"] = _const(layer, weights)
        elif layer.type in ("Loop", "TensorIterator"):
            body = el.find("body")
            if body is None:
                raise DataError(f"load: {where}: the Loop has no <body>")
            layer.body = _graph(body, weights, f" in the body of layer {lid}{context}", depth + 1)

    sources: dict[tuple[int, int], tuple[int, int]] = {}
    for edge in edges_el.findall("edge"):
        where = f"an edge{context}"
        f_layer, f_port = _int(edge.get("from-layer"), where, "from-layer"), _int(edge.get("from-port"), where,
                                                                                  "from-port")
        t_layer, t_port = _int(edge.get("to-layer"), where, "to-layer"), _int(edge.get("to-port"), where, "to-port")
        if f_layer not in layers or t_layer not in layers:
            raise DataError(f"load: the edge {f_layer}:{f_port} -> {t_layer}:{t_port}{context} names a missing layer")
        if f_port not in {p.id for p in layers[f_layer].outputs}:
            raise DataError(f"load: {layers[f_layer].where}: an edge leaves from port {f_port}, which is not "
                            "one of its outputs")
        if t_port not in {p.id for p in layers[t_layer].inputs}:
            raise DataError(f"load: {layers[t_layer].where}: an edge arrives at port {t_port}, which is not "
                            "one of its inputs")
        if (t_layer, t_port) in sources:
            raise DataError(f"load: {layers[t_layer].where}: input port {t_port} has two incoming edges")
        sources[(t_layer, t_port)] = (f_layer, f_port)
    for layer in layers.values():
        for port in layer.inputs:
            if (layer.id, port.id) not in sources:
                raise DataError(f"load: {layer.where}: input port {port.id} is not connected")
    return Graph(layers, _topological(layers, sources, context), sources, context)


def _topological(layers: dict[int, Layer], sources, context: str) -> list[int]:
    """Kahn's algorithm; a cycle is malformed (back edges live in the Loop's own section)."""
    users: dict[int, list[int]] = {lid: [] for lid in layers}
    pending = {lid: 0 for lid in layers}
    for (t_layer, _), (f_layer, _) in sources.items():
        users[f_layer].append(t_layer)
        pending[t_layer] += 1
    ready = sorted(lid for lid, n in pending.items() if n == 0)
    order = []
    while ready:
        lid = ready.pop()
        order.append(lid)
        for user in users[lid]:
            pending[user] -= 1
            if pending[user] == 0:
                ready.append(user)
    if len(order) != len(layers):
        raise DataError(f"load: the graph{context} has a cycle")
    return order


def shape_attribute(layer: Layer, key: str = "shape") -> tuple[int, ...]:
    """A comma-separated shape attribute ("" is a scalar; "?" or -1 a dynamic dimension)."""
    text = layer.data.get(key)
    if text is None:
        raise DataError(f"load: {layer.where}: the {key!r} attribute is missing")
    text = text.strip().strip("[]")
    if not text:
        return ()
    dims = []
    for part in text.split(","):
        part = part.strip()
        dims.append(-1 if part in ("?", "-1") or ".." in part else _int(part, layer.where, key))
    if len(dims) > MAX_RANK:
        raise DataError(f"load: {layer.where}: rank {len(dims)} is more than {MAX_RANK}")
    if any(d < -1 for d in dims):
        raise DataError(f"load: {layer.where}: {key} {text!r} has a negative dimension")
    return tuple(dims)


def element_type(layer: Layer, key: str = "element_type") -> str:
    kind = layer.data.get(key)
    if kind not in ELEMENT_TYPES:
        raise NotSupportedError(f"load: {layer.where}: element type {kind!r} is not supported "
                                f"(supported: {', '.join(ELEMENT_TYPES)})")
    return kind


def _const(layer: Layer, weights: bytes) -> np.ndarray:
    """A Const's value, read from the .bin after checking offset and size."""
    kind = element_type(layer)
    shape = shape_attribute(layer)
    if -1 in shape:
        raise DataError(f"load: {layer.where}: a constant cannot have a dynamic shape")
    offset = _int(layer.data.get("offset"), layer.where, "offset")
    size = _int(layer.data.get("size"), layer.where, "size")
    dtype = np.dtype(ELEMENT_TYPES[kind][0])
    _check_extent(layer, shape, dtype)
    count = 1
    for d in shape:
        count *= d
    if offset < 0 or size < 0:
        raise DataError(f"load: {layer.where}: negative offset {offset} or size {size}")
    # OpenVINO writes an empty constant (e.g. the shape [] of a scalar) with
    # size 1, so a zero-element constant may name a few bytes it does not read.
    if size != count * dtype.itemsize and not (count == 0 and size <= dtype.itemsize):
        raise DataError(f"load: {layer.where}: size {size} does not match shape {list(shape)} of {kind} "
                        f"({count * dtype.itemsize} bytes)")
    if offset + size > len(weights):
        raise DataError(f"load: {layer.where}: bytes {offset}..{offset + size} lie outside the weights "
                        f"({len(weights)} bytes; is the .bin truncated or missing?)")
    raw = np.frombuffer(weights, dtype=dtype.newbyteorder("<"), count=count, offset=offset)
    value = raw.astype(dtype).reshape(shape)
    if kind == "boolean":
        value = (value != 0).astype(np.uint8)
    return value


def extent_problem(shape, itemsize: int) -> str | None:
    """What makes `shape` one no WebNN (or numpy) tensor can have, or None:
    a dimension outside 0..MAX_DIMENSION, or more than maxTensorByteLength bytes
    at `itemsize` an element, zero dimensions counted as 1 (a zero-size shape
    like [2147483648, 2147483648, 0] reads nothing, yet numpy cannot represent
    it: "array is too big")."""
    if any(not 0 <= d <= MAX_DIMENSION for d in shape):
        return f"has a dimension above {MAX_DIMENSION} or below 0"
    extent = itemsize
    for d in shape:
        extent *= max(d, 1)
    if extent > MAX_TENSOR_BYTE_LENGTH:
        return (f"spans {extent} bytes at {itemsize} a element (zero dimensions counted as 1), more than "
                f"maxTensorByteLength {MAX_TENSOR_BYTE_LENGTH}")
    return None


def _check_extent(layer: Layer, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """A constant's shape must be one WebNN can hold (checked before numpy sees it)."""
    problem = extent_problem(shape, dtype.itemsize)
    if problem:
        raise DataError(f"load: {layer.where}: shape {list(shape)} {problem}")
