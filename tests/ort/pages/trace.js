// Records what a WebNN client calls on navigator.ml: every operation of ML,
// MLContext, MLGraphBuilder, MLGraph and MLTensor, with the keys of the
// dictionaries it passes and the data types of the descriptors and operands it
// passes, so the test can list what ORT really uses.
(function traceWebNN(global) {
  "use strict";
  const calls = new Map();   // "Interface.member" -> {count, keys: Set, dataTypes: Set}
  global.webnnTrace = {
    calls,
    summary() {
      const out = {};
      for (const [name, entry] of calls) {
        out[name] = {count: entry.count, keys: [...entry.keys].sort(), dataTypes: [...entry.dataTypes].sort()};
      }
      return out;
    },
    reset() { calls.clear(); },
  };

  function dictKeys(value, into, prefix) {
    if (value === null || typeof value !== "object" || ArrayBuffer.isView(value) ||
        value instanceof ArrayBuffer || Array.isArray(value)) return;
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return;   // an interface object, not a dictionary
    for (const key of Object.keys(value)) {
      into.add(prefix + key);
      if (prefix === "") dictKeys(value[key], into, key + ".");
    }
  }

  for (const name of ["ML", "MLContext", "MLGraphBuilder", "MLGraph", "MLTensor"]) {
    const proto = global[name] && global[name].prototype;
    if (!proto) continue;
    for (const member of Object.getOwnPropertyNames(proto)) {
      const descriptor = Object.getOwnPropertyDescriptor(proto, member);
      if (member === "constructor" || typeof descriptor.value !== "function") continue;
      const original = descriptor.value;
      const wrapped = {
        [member](...args) {
          const key = `${name}.${member}`;
          let entry = calls.get(key);
          if (!entry) calls.set(key, entry = {count: 0, keys: new Set(), dataTypes: new Set()});
          entry.count++;
          args.forEach((arg) => {
            dictKeys(arg, entry.keys, "");
            if (arg && typeof arg === "object" && typeof arg.dataType === "string") entry.dataTypes.add(arg.dataType);
          });
          return original.apply(this, args);
        },
      }[member];
      Object.defineProperty(wrapped, "length", {value: original.length});
      Object.defineProperty(proto, member, {...descriptor, value: wrapped});
    }
  }
})(globalThis);
