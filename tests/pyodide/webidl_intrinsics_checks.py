"""The JS helpers of webnn_py/bindings/webidl.py use the intrinsics they captured when
they were made, not methods looked up on the page's Array.prototype or
Function.prototype later: here, with no shim around them to put the originals back
(in a page the shim does that for every call into the runtime), the page's
Function.prototype.call throws and its Array.prototype.some / map record the callbacks
they are handed, and argument lists (BigInts marked), sequences and buffers still
convert, with none of the helpers' callbacks seen. (some / map delegate rather than
throw: Pyodide's own glue calls them -- `instanceof PyProxy` -- and would break; the
shim's swap covers that in a page. Its glue copes with a throwing call.)
Runs only inside Pyodide (tests/test_pyodide.py); plain asserts, as pytest is absent there."""
from __future__ import annotations

from pyodide.code import run_js

from webnn_py.bindings import JsBigInt, convert, script_arguments

_REPLACE = run_js("""
(() => {
  const targets = [[Array.prototype, "some"], [Array.prototype, "map"], [Function.prototype, "call"]];
  const saved = targets.map(([owner, key]) => [owner, key, Object.getOwnPropertyDescriptor(owner, key)]);
  const apply = Reflect.apply, define = Object.defineProperty;
  return {
    replace() {
      const callbacks = [];
      for (const [owner, key, original] of saved) {
        const value = key === "call"
          ? function (...args) {
              callbacks[callbacks.length] = `call: ${typeof this === "function" ? this.name : typeof this}`;
              return apply(original.value, this, args);
            }
          : function (callback, ...rest) {
              callbacks[callbacks.length] = `${key}: ${callback}`;
              return apply(original.value, this, [callback, ...rest]);
            };
        define(owner, key, { configurable: true, writable: true, value });
      }
      return callbacks;
    },
    restore() {
      for (let i = saved.length - 1; i >= 0; i--) define(saved[i][0], saved[i][1], saved[i][2]);
    },
  };
})()
""")


def _with_replaced_builtins(check) -> None:
    # The helpers are made at their first use, inside a call into the runtime in a page:
    # made here before the page's replacements, as there.
    script_arguments(run_js("[1n]"))
    convert(run_js("[1]"), "sequence<long>")
    convert(run_js("new Float32Array(1)"), "ArrayBufferView")
    callbacks = _REPLACE.replace()
    try:
        check()
    finally:
        _REPLACE.restore()
    # The helpers' callbacks (marking BigInts) and the getters and iterator methods they
    # call never reach the page's versions; Pyodide's own uses (`instanceof PyProxy`) do.
    ours = [c for c in callbacks.to_py()
            if "bigint" in c or "special" in c or c == "call: call" or c.startswith("call: get ")]
    assert ours == [], ours


def test_argument_lists_with_and_without_bigints():
    seen = {}

    def check():
        seen["plain"] = script_arguments(run_js("['x', 2, null]"))
        seen["bigint"] = script_arguments(run_js("['x', 2n ** 70n, 3]"))
    _with_replaced_builtins(check)
    assert seen["plain"] == ("x", 2, None)
    marked = seen["bigint"]
    assert marked[0] == "x" and marked[2] == 3
    assert isinstance(marked[1], JsBigInt) and int(marked[1]) == 2 ** 70


def test_sequences_and_buffers():
    seen = {}

    def check():
        seen["sequence"] = convert(run_js("[4, 5, 6]"), "sequence<unsigned long>")
        seen["buffer"] = convert(run_js("Float32Array.of(1.5, -2)"), "ArrayBufferView").to_bytes()
    _with_replaced_builtins(check)
    assert list(seen["sequence"]) == [4, 5, 6]
    assert seen["buffer"] == bytes.fromhex("0000c03f000000c0")
