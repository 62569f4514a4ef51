// webnn-py's JS shim: installs navigator.ml backed by webnn_py running on Pyodide.
//
// Thin by design. It builds the WebIDL interface objects from the generated
// metadata (js_shim/generated/webidl_metadata.js, prepended to this file when
// served), keeps a wrapper per Python object, performs brand checks, and
// forwards every operation and attribute to webnn_py.browser.bridge with the
// raw JS arguments: WebIDL argument conversion happens in Python, in the
// generated bindings, so the host library and the browser behave alike.
//
// Configuration (optional, set before this script runs):
//   self.webnnPolyfillConfig = {
//     baseURL:  where webnn-polyfill.js and pyodide/ are served (default: this script's URL),
//     pyodideURL: the Pyodide runtime folder (default: baseURL + "pyodide/"),
//     keepNative: true to keep a native navigator.ml *if it works*: its createContext()
//                 must resolve and a tiny graph must build and compute the right
//                 values within nativeProbeTimeoutMs (default 3000); otherwise the
//                 polyfill replaces it (e.g. Debian Chromium's flagged navigator.ml,
//                 which cannot create a context). Until that is decided, the native
//                 createContext() waits for the decision. By default (false) a native
//                 navigator.ml is always replaced. Not applied in service workers.
//     timeSlice: milliseconds of work a dispatch() does before handing the thread
//                back to the page (default 8; 0 or null: run each dispatch in one
//                task). See the README's "Responsiveness" section.
//     lazy: true to boot Python at the first createContext() rather than at once,
//     debug: true for Pyodide's debug mode (clearer errors, slower),
//   };
(function installWebNNPolyfill(global, overrides) {
  "use strict";

  const IDL = WEBNN_IDL_METADATA;  // eslint-disable-line no-undef
  const BUILD_DEFAULTS = {};  // tools/build_dist.py writes dist/'s defaults here: its content-hashed runtime folder
  const config = Object.assign({}, BUILD_DEFAULTS, global.webnnPolyfillConfig || {}, overrides || {});
  const isWindow = typeof global.document !== "undefined";
  const globalKind = isWindow ? "Window" : "Worker";
  const isServiceWorker = typeof ServiceWorkerGlobalScope === "function" && global instanceof ServiceWorkerGlobalScope;

  // [SecureContext]: nothing is exposed on a non-secure origin.
  if (!global.isSecureContext) return;

  const baseURL = new URL(".", config.baseURL || currentScriptURL()).href;

  if (config.keepNative && !isServiceWorker && global.navigator && global.navigator.ml) {
    // Keep the native navigator.ml only if it works; decide before any context exists.
    keepNativeIfItWorks(global.navigator.ml, () => installWebNNPolyfill(global, { keepNative: false, baseURL }));
    return;
  }
  const pyodideURL = new URL(config.pyodideURL || "pyodide/", baseURL).href;

  // ---- keepNative: probe the native implementation ------------------------------------------
  //
  // A native navigator.ml may exist and still not work (Debian Chromium's flagged
  // one rejects createContext(); an older one may implement a 2024 API without
  // MLTensor). We ask it to do what the polyfill would: create a context, build
  // a + b, and compute it through createTensor/writeTensor/dispatch/readTensor.
  // While that runs, the native createContext() waits for the verdict, so a page
  // never gets a context from the implementation that is then replaced; on
  // failure the polyfill is installed and serves those calls.

  function keepNativeIfItWorks(nativeML, installPolyfill) {
    const proto = Object.getPrototypeOf(nativeML);
    const nativeCreate = proto.createContext;
    const NativeBuilder = global.MLGraphBuilder;
    const timeoutMs = config.nativeProbeTimeoutMs === undefined ? 3000 : config.nativeProbeTimeoutMs;
    const verdict = probeNative(nativeML, nativeCreate, NativeBuilder, timeoutMs).then((works) => {
      Object.defineProperty(proto, "createContext", { value: nativeCreate, writable: true, enumerable: true, configurable: true });
      if (!works) {
        global.console.info("webnn-py: the native navigator.ml does not work here; using the polyfill");
        installPolyfill();
      }
      return works ? "native" : "polyfill";
    });
    Object.defineProperty(global, "webnnPolyfillDecision", { value: verdict, configurable: true });
    Object.defineProperty(proto, "createContext", {
      value: {
        createContext(...args) {
          return verdict.then((which) => (which === "native" ? nativeCreate.apply(this, args)
                                                              : global.navigator.ml.createContext(...args)));
        },
      }.createContext,
      writable: true, enumerable: true, configurable: true,
    });
  }

  async function probeNative(nativeML, nativeCreate, NativeBuilder, timeoutMs) {
    const attempt = (async () => {
      const context = await nativeCreate.call(nativeML);
      const builder = new NativeBuilder(context);
      const desc = { dataType: "float32", shape: [2] };
      const a = builder.input("a", desc), b = builder.input("b", desc);
      const graph = await builder.build({ c: builder.add(a, b) });
      const [ta, tb, tc] = await Promise.all([
        context.createTensor({ ...desc, writable: true }), context.createTensor({ ...desc, writable: true }),
        context.createTensor({ ...desc, readable: true })]);
      context.writeTensor(ta, new Float32Array([1.5, -2]));
      context.writeTensor(tb, new Float32Array([0.25, 8]));
      context.dispatch(graph, { a: ta, b: tb }, { c: tc });
      const c = new Float32Array(await context.readTensor(tc));
      if (typeof context.destroy === "function") context.destroy();
      return c.length === 2 && c[0] === 1.75 && c[1] === 6;
    })().catch(() => false);
    let timer;
    const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve(false), timeoutMs); });
    const works = await Promise.race([attempt, timeout]);
    clearTimeout(timer);
    return works;
  }

  // ---- the Python runtime, booted once, on first use of navigator.ml -----------------------

  let bridge = null;       // webnn_py.browser.bridge, once booted
  let bootPromise = null;

  function boot() {
    if (!bootPromise) bootPromise = bootPython();
    return bootPromise;
  }

  // One Python runtime per same-origin frame tree. A frame whose parent (same
  // origin, same polyfill assets) already has the runtime uses it instead of
  // booting its own: objects then work across the frames' realms, as native
  // platform objects do (a page may build with a context its iframe created),
  // and a frame costs no second Pyodide. The key is a registered symbol, so the
  // frames' polyfills find each other; a cross-origin parent throws on access.
  const RUNTIME = Symbol.for("webnn-py runtime");

  function parentRuntime() {
    if (!isWindow || global.parent === global) return null;
    try {
      const shared = global.parent[RUNTIME];
      return shared && shared.pyodideURL === pyodideURL ? shared : null;
    } catch (e) {
      return null;   // a cross-origin parent
    }
  }

  async function bootPython() {
    const shared = parentRuntime();
    if (shared) {
      ({ bridge, PyProxy } = await shared.boot());
      mlImpl.resolve(bridge.ml);
      return;
    }
    const started = performance.now();
    mark("boot");
    const runtimeConfig = await fetch(pyodideURL + "runtime-config.json")
      .then((r) => (r.ok ? r.json() : {}), () => ({}));
    mark("config");
    const indexURL = runtimeConfig.source === "cdn" ? runtimeConfig.indexURL : pyodideURL;
    const loadPyodide = await pyodideLoader(indexURL);
    mark("pyodide.js");
    const pyodide = await loadPyodide({ indexURL, fullStdLib: false });
    mark("loadPyodide");
    // loadPackage() reports a package that fails to load (a missing file, a
    // sha256 mismatch) through errorCallback rather than by rejecting: collect
    // those and fail the boot with them, instead of a later "No module named".
    const failures = [];
    const report = { errorCallback: (message) => failures.push(message), messageCallback: () => {} };
    if (runtimeConfig.source === "cdn") {
      await pyodide.loadPackage("numpy", report);
      await pyodide.loadPackage(pyodideURL + runtimeConfig.wheel, report);
    } else {
      // numpyBytecode: numpy's .pyc files, compiled at set-up by Pyodide itself (the
      // official wheel ships sources only), so `import numpy` compiles nothing; fetched
      // and unpacked together with the packages (tools/setup_runtime.py).
      const extra = runtimeConfig.numpyBytecode ? [pyodideURL + runtimeConfig.numpyBytecode] : [];
      await pyodide.loadPackage(["numpy", "webnn-py", ...extra], report);
    }
    mark("packages");
    if (failures.length) {
      throw new DOMException(`webnn-py: the Python runtime did not load: ${failures.join("; ")}`, "NotSupportedError");
    }
    if (config.debug) pyodide.setDebug(true);
    bridge = pyodide.pyimport("webnn_py.browser.bridge");
    mark("import");
    bridge.install(unwrapForPython, config.timeSlice === undefined ? 8 : config.timeSlice, postTask());
    PyProxy = pyodide.ffi.PyProxy;
    mlImpl.resolve(bridge.ml);
    mark("ready");
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    global.console.debug(`webnn-py: Python runtime ready in ${seconds} s`);
    return { bridge, PyProxy };
  }

  // Boot phases as User Timing marks ("webnn-py:boot", …, "webnn-py:ready"), for
  // bench/cold_start.py and the browser's performance panel. Best effort: a page
  // that replaced `performance` loses only the marks.
  function mark(phase) {
    try { performance.mark("webnn-py:" + phase); } catch (e) { /* no User Timing */ }
  }

  // The next slice of a dispatch runs in a new task (README "Responsiveness").
  function postTask() {
    const mode = config.postTask || "user-visible";
    if (mode !== "pyodide" && typeof scheduler === "object" && scheduler && typeof scheduler.postTask === "function") {
      return (callback) => { scheduler.postTask(callback, { priority: mode }); };
    }
    return undefined;   // Pyodide's own call_soon: postMessage / MessageChannel, not clamped
  }

  // Pyodide's loadPyodide(): a classic <script> in windows, importScripts() in
  // classic workers, import() in module workers (which have no importScripts).
  async function pyodideLoader(indexURL) {
    if (isWindow) {
      await new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = indexURL + "pyodide.js";
        script.onload = resolve;
        script.onerror = () => reject(new DOMException(`webnn-py: cannot load ${script.src}`, "NotSupportedError"));
        document.head.appendChild(script);
      });
      return global.loadPyodide;
    }
    try {
      global.importScripts(indexURL + "pyodide.js");
      return global.loadPyodide;
    } catch (error) {
      if (!(error instanceof TypeError)) throw error;
      return (await import(indexURL + "pyodide.mjs")).loadPyodide;
    }
  }

  function currentScriptURL() {
    if (isWindow && document.currentScript) return document.currentScript.src;
    // importScripts() has no currentScript; the stack names the script being run.
    const match = /(https?:\/\/[^\s)]+?webnn-polyfill[^\s):]*\.js)/.exec(new Error().stack || "");
    return match ? match[1] : global.location.href;
  }

  // ---- wrappers: one JS object per Python object -------------------------------------------
  //
  // Every WebNN method that returns an interface object returns a new one, so a
  // Python object reaches JS once and gets exactly one wrapper; the wrapper owns
  // the PyProxy, which Pyodide releases when the wrapper is garbage-collected.

  let PyProxy = null;
  // Registered symbols: frames sharing a runtime recognise each other's wrappers.
  const IMPL = Symbol.for("webnn-py implementation");
  const BRAND = Symbol.for("webnn-py interface");
  const interfaces = {};        // name -> interface object (constructor function)
  const ALLOW_CONSTRUCTION = Symbol("internal construction");
  const FAILURE_TYPE = "BridgeFailure";  // PyProxy.type is the Python class name

  function attach(wrapper, proxy) {
    Object.defineProperty(wrapper, IMPL, { value: proxy });
    Object.defineProperty(wrapper, BRAND, { value: proxy.type });
    return wrapper;
  }

  // Handed to Python: the Python object behind a wrapper, or undefined. Pyodide
  // consumes (destroys) a PyProxy that a JS function returns to Python, so the
  // wrapper hands out a copy and keeps its own.
  function unwrapForPython(value) {
    return value !== null && typeof value === "object" && IMPL in value && value[IMPL] ? value[IMPL].copy() : undefined;
  }

  function implOf(self, interfaceName, member) {
    if (self !== null && typeof self === "object" && IMPL in self && inherits(self[BRAND], interfaceName)) {
      return self[IMPL];
    }
    throw new TypeError(`Failed to execute '${member}' on '${interfaceName}': Illegal invocation`);
  }

  function inherits(name, ancestor) {
    for (let n = name; n; n = IDL.interfaces[n] && IDL.interfaces[n].inherits) if (n === ancestor) return true;
    return false;
  }

  // ---- results and errors ------------------------------------------------------------------

  function toError(name, message) {
    if (name === "TypeError") return new TypeError(message);
    return new DOMException(message, name);
  }

  // A bridge result: a JS value, a PyProxy of an API object (wrapped), of an
  // awaitable (returned as is), or of a Failure (thrown as the JS error it names).
  function unpack(result) {
    // sequence<MLOperand> results (split, lstm, gru) arrive as arrays of PyProxies.
    if (Array.isArray(result) && PyProxy && result.some((item) => item instanceof PyProxy)) return result.map(unpack);
    if (!(PyProxy && result instanceof PyProxy)) return result;
    if (result.type === FAILURE_TYPE) {
      // `thrown`: page script threw during the call (a getter, a Proxy trap, an iterator,
      // valueOf/toString): rethrown as the same value, as WebIDL's "?" steps say.
      const thrown = result.thrown;
      const error = thrown ? thrown.value : toError(result.name, result.message);
      result.destroy();
      throw error;
    }
    const ctor = interfaces[result.type];
    if (ctor) return attach(new ctor(ALLOW_CONSTRUCTION), result);
    return result;
  }

  // A promise for a Python awaitable: the bridge resolves a JS promise with the
  // outcome (a JS value, or a PyProxy this side owns: an API object to wrap, or a
  // failure to throw as its JS error).
  function toPromise(awaitable) {
    let settled;
    try {
      settled = bridge.settle(awaitable);
    } finally {
      awaitable.destroy();
    }
    return settled.then((result) => {
      if (!(PyProxy && result instanceof PyProxy)) return result;
      const owned = result.copy();
      result.destroy();
      return unpack(owned);
    });
  }

  // Pyodide 0.27 cannot proxy a Float16Array (converting one throws "Unknown typed
  // array type"), so a Float16Array argument (constant(), writeTensor(), readTensor()
  // ...) reaches Python as a Uint16Array over the same bytes: the float16 rules take
  // those as bit patterns (§12.1 note), and readTensor() writes through it into the
  // caller's memory. Arguments are otherwise passed as they are.
  const Float16ArrayCtor = typeof Float16Array === "function" ? Float16Array : null;
  function argumentsForPython(args) {
    if (!Float16ArrayCtor || !args.some((arg) => arg instanceof Float16ArrayCtor)) return args;
    return args.map((arg) => {
      if (!(arg instanceof Float16ArrayCtor)) return arg;
      try {
        return new Uint16Array(arg.buffer, arg.byteOffset, arg.length);
      } catch (error) {
        return new Uint16Array(0);   // a detached buffer: zero bytes, as WebIDL sees it
      }
    });
  }

  function isPromiseType(type) {
    return /^Promise</.test(type);
  }

  // ---- interface objects -------------------------------------------------------------------

  function defineInterface(meta) {
    const name = meta.name;
    const ctor = function () {
      if (!new.target) throw new TypeError(`Failed to construct '${name}': Please use the 'new' operator.`);
      if (arguments[0] === ALLOW_CONSTRUCTION) return;
      if (!meta.ctor) throw new TypeError("Illegal constructor");
      if (policyAllowed === false) {
        // §8.9.1 step 1 (the only constructor WebNN has is MLGraphBuilder's).
        throw new DOMException(`Failed to construct '${name}': the "webnn" permissions policy does not allow WebNN ` +
                               "in this document", "SecurityError");
      }
      if (!bridge) throw new TypeError(`Failed to construct '${name}': the WebNN runtime is not ready`);
      const result = bridge.construct(name, argumentsForPython(Array.from(arguments)));
      if (result.type === FAILURE_TYPE) unpack(result);   // throws
      attach(this, result);
    };
    Object.defineProperty(ctor, "name", { value: name });
    Object.defineProperty(ctor, "prototype", { writable: false });
    Object.defineProperty(ctor, "length", { value: meta.ctor ? meta.ctor.length : 0 });
    const proto = ctor.prototype;
    if (meta.inherits) {
      Object.setPrototypeOf(proto, interfaces[meta.inherits].prototype);
      Object.setPrototypeOf(ctor, interfaces[meta.inherits]);
    }
    Object.defineProperty(proto, Symbol.toStringTag, { value: name, configurable: true });

    for (const op of meta.operations) {
      const promise = isPromiseType(op.overloads[0].returnType);
      const method = {
        [op.name](...args) {
          let impl;
          try {
            impl = implOf(this, name, op.name);
          } catch (error) {
            if (promise) return Promise.reject(error);
            throw error;
          }
          const outcome = bridge.invoke(impl, op.name, argumentsForPython(args));
          if (!promise) return unpack(outcome);
          let awaitable;
          try {
            awaitable = unpack(outcome);
          } catch (error) {
            return Promise.reject(error);
          }
          return toPromise(awaitable);
        },
      }[op.name];
      Object.defineProperty(method, "length", { value: op.length });
      Object.defineProperty(proto, op.name, { value: method, writable: true, enumerable: true, configurable: true });
    }

    for (const attr of meta.attributes) {
      const promiseCache = new WeakMap();
      const frozen = /^FrozenArray</.test(attr.type);
      const getter = {
        [`get ${attr.name}`]() {
          if (isPromiseType(attr.type)) {
            // A promise-typed attribute reports errors as a rejected promise (WebIDL §3.7.6).
            let impl;
            try {
              impl = implOf(this, name, attr.name);
            } catch (error) {
              return Promise.reject(error);
            }
            if (!promiseCache.has(this)) promiseCache.set(this, toPromise(unpack(bridge.get(impl, attr.name))));
            return promiseCache.get(this);
          }
          const value = unpack(bridge.get(implOf(this, name, attr.name), attr.name));
          return frozen ? Object.freeze(value) : value;
        },
      }[`get ${attr.name}`];
      Object.defineProperty(proto, attr.name, { get: getter, enumerable: true, configurable: true });
    }

    interfaces[name] = ctor;
    return ctor;
  }

  // Parents first, so prototype chains can be linked.
  const pending = Object.values(IDL.interfaces).filter(
    (meta) => meta.exposed.some((g) => g === globalKind || g === "*"));
  while (pending.length) {
    const index = pending.findIndex((meta) => !meta.inherits || interfaces[meta.inherits]);
    const [meta] = pending.splice(index, 1);
    const ctor = defineInterface(meta);
    Object.defineProperty(global, meta.name, { value: ctor, writable: true, enumerable: false, configurable: true });
  }

  // ---- the "webnn" permissions policy (§7.5; default allowlist 'self') ----------------------
  //
  // Where the browser knows the "webnn" feature, its own answer counts. Otherwise
  // we apply the policy ourselves: top-level documents and same-origin frames are
  // allowed (unless an allow attribute says otherwise); a cross-origin frame asks
  // its parent's polyfill, which vouches for it only if the <iframe> delegates
  // "webnn" to the frame's origin and the parent is itself allowed. A parent
  // without the polyfill cannot vouch, so the frame is refused.

  const POLICY_QUERY = "webnn-py:policy-query";
  const POLICY_ANSWER = "webnn-py:policy-answer";
  let policyDecision = null;   // Promise<boolean>, decided once per global
  let policyAllowed = null;    // its value once known, for the synchronous MLGraphBuilder check

  function webnnAllowed() {
    if (!policyDecision) {
      policyDecision = decidePolicy().then((allowed) => (policyAllowed = allowed));
    }
    return policyDecision;
  }

  const POLICY_HOOK = Symbol.for("webnn-py:policy");  // same-origin frames ask through it

  async function decidePolicy() {
    if (!isWindow) return true;  // a worker has no Document of its own to consult
    const known = document.featurePolicy && document.featurePolicy.features().includes("webnn");
    if (known) return document.featurePolicy.allowsFeature("webnn");
    return allowedIn(window);
  }

  async function allowedIn(win) {
    if (win === win.parent) return true;   // a top-level document
    let frame = null;
    try {
      frame = win.frameElement;
    } catch (e) { /* a cross-origin parent */ }
    if (!frame) return win === window ? askParent() : false;
    if (!delegates(frame, win.location.origin, true)) return false;
    const parentDecision = win.parent[POLICY_HOOK];
    return parentDecision ? parentDecision() : allowedIn(win.parent);
  }

  // Does <iframe allow="..."> grant "webnn" to `origin`? `byDefault` is what
  // applies without a webnn directive (the default allowlist 'self').
  function delegates(frame, origin, byDefault) {
    const directive = (frame.getAttribute("allow") || "").split(";").map((d) => d.trim().split(/\s+/))
      .find((tokens) => tokens[0] === "webnn");
    if (!directive) return byDefault;
    const allowlist = directive.slice(1);
    if (allowlist.length === 0) allowlist.push("'src'");
    return allowlist.some((item) => {
      if (item === "*") return true;
      if (item === "'none'") return false;
      if (item === "'self'") return origin === location.origin;
      if (item === "'src'") return origin === new URL(frame.src, location.href).origin;
      try {
        return new URL(item).origin === origin;
      } catch (e) {
        return false;
      }
    });
  }

  function askParent() {
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(false), 3000);
      function finish(allowed) {
        clearTimeout(timer);
        window.removeEventListener("message", onMessage);
        resolve(allowed);
      }
      function onMessage(event) {
        if (event.source === window.parent && event.data && event.data.type === POLICY_ANSWER) {
          finish(event.data.allowed === true);
        }
      }
      window.addEventListener("message", onMessage);
      window.parent.postMessage({ type: POLICY_QUERY }, "*");
    });
  }

  if (isWindow) {
    Object.defineProperty(window, POLICY_HOOK, { value: webnnAllowed });
    // Answer our cross-origin frames' questions about their policy.
    window.addEventListener("message", async (event) => {
      if (!event.data || event.data.type !== POLICY_QUERY) return;
      const frame = Array.from(document.querySelectorAll("iframe")).find((f) => f.contentWindow === event.source);
      if (!frame) return;
      const sameOrigin = event.origin === location.origin;
      const allowed = (await webnnAllowed()) && delegates(frame, event.origin, sameOrigin);
      event.source.postMessage({ type: POLICY_ANSWER, allowed }, event.origin === "null" ? "*" : event.origin);
    });
  }

  // ---- navigator.ml ([SameObject]): a wrapper of the Python ML whose Python object
  // arrives when the runtime has booted. createContext() waits for that.

  const mlImpl = {};
  mlImpl.ready = new Promise((resolve) => { mlImpl.resolve = resolve; });
  const ml = new interfaces.ML(ALLOW_CONSTRUCTION);
  Object.defineProperty(ml, BRAND, { value: "ML" });  // its IMPL arrives with the runtime
  let mlProxy = null;
  Object.defineProperty(ml, IMPL, { get: () => mlProxy });
  mlImpl.ready.then((proxy) => { mlProxy = proxy; });

  const createContext = interfaces.ML.prototype.createContext;
  Object.defineProperty(interfaces.ML.prototype, "createContext", {
    value: {
      createContext(...args) {
        if (this !== ml) return createContext.apply(this, args);   // rejects: illegal invocation
        // §8.2.2 step 3: a document not allowed to use "webnn" gets a SecurityError.
        return Promise.all([webnnAllowed(), boot()]).then(([allowed]) => {
          if (!allowed) {
            throw new DOMException("createContext: the \"webnn\" permissions policy does not allow WebNN " +
                                   "in this document", "SecurityError");
          }
          return createContext.apply(this, args);
        });
      },
    }.createContext,
    writable: true, enumerable: true, configurable: true,
  });
  Object.defineProperty(interfaces.ML.prototype.createContext, "length", { value: createContext.length });

  const navigatorProto = Object.getPrototypeOf(global.navigator);
  Object.defineProperty(navigatorProto, "ml", {
    get: {
      get ml() {
        // Brand check: only this global's navigator has an ml attribute value.
        if (this !== global.navigator) throw new TypeError("Illegal invocation");
        return ml;
      },
    }.__lookupGetter__("ml"),
    enumerable: true,
    configurable: true,
  });

  if (isWindow) Object.defineProperty(global, RUNTIME, { value: { pyodideURL, boot } });

  // Start loading right away (pages that include the polyfill mean to use it),
  // unless asked to wait for the first createContext().
  if (isServiceWorker) {
    // importScripts() of new URLs is only allowed until the service worker is
    // installed: keep it installing until the runtime's scripts are in.
    global.addEventListener("install", (event) => event.waitUntil(boot()));
  } else if (!config.lazy) {
    boot().catch((error) => global.console.error("webnn-py: failed to start", error));
  }
})(typeof globalThis !== "undefined" ? globalThis : self);
