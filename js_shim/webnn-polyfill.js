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

  // ---- intrinsics, captured when this script runs (README "Security model") ----------------
  //
  // Page script may replace built-ins afterwards (Array.prototype.some, Array.from,
  // Promise.prototype.then, Function.prototype.call, WeakMap.prototype.get, ...). Code
  // that runs after load uses only these copies, so such a page neither breaks the shim
  // nor sees what it handles, as with a native implementation. (Code that ran *before*
  // this script could have replaced them already: nothing in a realm can defend against
  // that.) No spread, for-of or array destructuring after load either: they call the
  // page-replaceable Array.prototype[Symbol.iterator].
  const { apply, construct, defineProperty, deleteProperty, getOwnPropertyDescriptor, getPrototypeOf, setPrototypeOf, ownKeys } = Reflect;
  const reflectGet = Reflect.get;
  // uncurry(f)(self, ...args) is f.call(self, ...args) through the original `call`, bound
  // once: no rest array and no Reflect.apply per call (the shim's hot paths use these).
  const uncurry = Function.prototype.bind.bind(Function.prototype.call);
  const ObjectCreate = Object.create, ObjectFreeze = Object.freeze, ObjectIsFrozen = Object.isFrozen, ObjectKeys = Object.keys;
  const ArrayIsArray = Array.isArray;
  const arraySlice = uncurry(Array.prototype.slice), arrayMap = uncurry(Array.prototype.map);
  const arraySome = uncurry(Array.prototype.some), arrayFind = uncurry(Array.prototype.find);
  const arrayPush = uncurry(Array.prototype.push), arrayIncludes = uncurry(Array.prototype.includes);
  const stringSplit = uncurry(String.prototype.split), stringTrim = uncurry(String.prototype.trim);
  const regexpExec = uncurry(RegExp.prototype.exec);
  const WeakMapCtor = WeakMap, WeakRefCtor = typeof WeakRef === "function" ? WeakRef : null;
  const weakMapGet = uncurry(WeakMap.prototype.get), weakMapSet = uncurry(WeakMap.prototype.set);
  const weakMapHas = uncurry(WeakMap.prototype.has), weakRefDeref = WeakRefCtor && uncurry(WeakRefCtor.prototype.deref);
  const PromiseCtor = Promise, promiseThen = uncurry(Promise.prototype.then);
  const promiseResolve = (value) => apply(Promise.resolve, PromiseCtor, [value]);
  const promiseReject = (reason) => apply(Promise.reject, PromiseCtor, [reason]);
  const TypeErrorCtor = TypeError, DOMExceptionCtor = DOMException, ProxyCtor = Proxy;
  const MessageChannelCtor = typeof MessageChannel === "function" ? MessageChannel : null;
  const setTimer = (callback, ms) => apply(setTimeout, global, [callback, ms]);
  const clearTimer = (id) => apply(clearTimeout, global, [id]);
  const listen = uncurry(EventTarget.prototype.addEventListener);
  const unlisten = uncurry(EventTarget.prototype.removeEventListener);
  const getter = (proto, name) => { const d = proto && getOwnPropertyDescriptor(proto, name); return d && d.get ? uncurry(d.get) : null; };
  const eventIsTrusted = (event) => event.isTrusted === true;   // [LegacyUnforgeable]: an own property of each event
  const stopImmediatePropagation = uncurry(Event.prototype.stopImmediatePropagation);
  const messageData = getter(MessageEvent.prototype, "data"), messageSource = getter(MessageEvent.prototype, "source");
  const messageOrigin = getter(MessageEvent.prototype, "origin"), messagePorts = getter(MessageEvent.prototype, "ports");
  const portPostMessage = MessageChannelCtor && uncurry(MessagePort.prototype.postMessage);
  const portStart = MessageChannelCtor && uncurry(MessagePort.prototype.start);
  const Float16ArrayCtor = typeof Float16Array === "function" ? Float16Array : null;
  const WebAssemblyObject = WebAssembly, wasmCompile = WebAssembly.compile;
  const wasmCompileStreaming = typeof WebAssembly.compileStreaming === "function" ? WebAssembly.compileStreaming : null;
  const isView = ArrayBuffer.isView;
  const typedArrayBuffer = getter(getPrototypeOf(Uint8Array.prototype), "buffer");
  const typedArrayByteOffset = getter(getPrototypeOf(Uint8Array.prototype), "byteOffset");
  const typedArrayLength = getter(getPrototypeOf(Uint8Array.prototype), "length");
  const typedArrayName = getter(getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag);
  const typedArrayByteLength = getter(getPrototypeOf(Uint8Array.prototype), "byteLength");
  const arrayBufferResizable = getter(ArrayBuffer.prototype, "resizable");
  const arrayBufferDetached = getter(ArrayBuffer.prototype, "detached");
  const Uint8ArrayCtor = Uint8Array, Uint16ArrayCtor = Uint16Array;
  const typedArraySet = uncurry(getPrototypeOf(Uint8Array.prototype).set);
  const schedulerObject = typeof scheduler === "object" && scheduler ? scheduler : null;   // eslint-disable-line no-undef
  const schedulerPostTask = schedulerObject && typeof schedulerObject.postTask === "function" ? schedulerObject.postTask : null;

  // The generated WebIDL metadata is a global constant page script can read: frozen, so
  // it cannot add members for the brand checks below to let through.
  const IDL = deepFreeze(WEBNN_IDL_METADATA);  // eslint-disable-line no-undef
  function deepFreeze(value) {
    if (value !== null && typeof value === "object" && !ObjectIsFrozen(value)) {
      ObjectFreeze(value);
      const keys = ownKeys(value);
      for (let i = 0; i < keys.length; i++) deepFreeze(value[keys[i]]);
    }
    return value;
  }
  const BUILD_DEFAULTS = {};  // tools/build_dist.py writes dist/'s defaults here: its content-hashed runtime folder
  const config = Object.assign({}, BUILD_DEFAULTS, global.webnnPolyfillConfig || {}, overrides || {});
  const isWindow = typeof global.document !== "undefined";
  const globalKind = isWindow ? "Window" : "Worker";
  const isServiceWorker = typeof ServiceWorkerGlobalScope === "function" && global instanceof ServiceWorkerGlobalScope;
  const isDedicatedWorker = typeof DedicatedWorkerGlobalScope === "function" && global instanceof DedicatedWorkerGlobalScope;

  // [SecureContext]: nothing is exposed on a non-secure origin.
  if (!global.isSecureContext) return;

  const baseURL = new URL(".", config.baseURL || currentScriptURL()).href;

  if (config.keepNative && !isServiceWorker && global.navigator && global.navigator.ml) {
    // Keep the native navigator.ml only if it works; decide before any context exists.
    keepNativeIfItWorks(global.navigator.ml, () => installWebNNPolyfill(global, { keepNative: false, baseURL }));
    return;
  }
  if (config.keepNative && !isServiceWorker) {
    // No native one to probe (Firefox, Safari): the verdict is known at once, and pages
    // await webnnPolyfillDecision the same way in every browser.
    defineProperty(global, "webnnPolyfillDecision", { value: Promise.resolve("polyfill"), configurable: true });
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
  //
  // Everything that touches Python lives in this closure: the bridge, the PyProxies and
  // the table that brands wrappers. Nothing of it is reachable from a global, and the
  // interface objects (of this realm, and of same-origin child frames sharing this
  // runtime) reach it only through a port whose operations are API calls on branded
  // wrappers (see "sharing the runtime with same-origin frames" below).

  let bridge = null;       // webnn_py.browser.bridge's functions (and its ML), once booted
  let emscripten = null;   // Pyodide's Emscripten module: its HEAPU8 / HEAPU32, current after a growth
  let bootPromise = null;
  let fatalError = null;   // what made the runtime unusable (failRuntime), or null

  // Resolves with undefined: what a page could intercept on the way must not be the bridge.
  function boot() {
    if (!bootPromise) {
      bootPromise = promiseThen(bootPython(), () => undefined);
    }
    return bootPromise;
  }

  async function bootPython() {
    const started = performance.now();
    mark("boot");
    const runtimeConfig = await fetch(pyodideURL + "runtime-config.json")
      .then((r) => (r.ok ? r.json() : {}), () => ({}));
    mark("config");
    const wheels = fetchStoredWheels(runtimeConfig);
    if (!wheels) prefetch(runtimeConfig.prefetch);
    const sideModules = compileSideModules(runtimeConfig.sideModules);
    const snapshots = config.memorySnapshot !== false ? memorySnapshots(runtimeConfig.memorySnapshot) : null;
    const snapshot = snapshots ? snapshots.forBoot() : null;
    // dist/: Pyodide's own files in a folder of their own (runtimeConfig.indexURL, relative),
    // the standard library and the package index in the runtime folder
    const indexURL = runtimeConfig.source === "cdn" ? runtimeConfig.indexURL
      : typeof runtimeConfig.indexURL === "string" ? new URL(runtimeConfig.indexURL, pyodideURL).href : pyodideURL;
    const options = { indexURL, fullStdLib: false };
    if (runtimeConfig.source !== "cdn" && indexURL !== pyodideURL) {
      options.lockFileURL = pyodideURL + "pyodide-lock.json";
      options.stdLibURL = pyodideURL + "python_stdlib.zip";
    }
    const loadPyodide = await pyodideLoader(indexURL);
    mark("pyodide.js");
    const booted = await startPyodide(loadPyodide, options, await snapshot);
    const pyodide = booted.pyodide;
    watchForFatalErrors(pyodide._api);
    mark("loadPyodide");
    await linkSideModules(pyodide, sideModules);
    mark("sideModules");
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
      if (!wheels || !unpackStoredWheels(pyodide, runtimeConfig.sitePackages, await wheels)) {
        await pyodide.loadPackage(["numpy", "webnn-py", ...extra], report);
      }
    }
    mark("packages");
    if (failures.length) {
      throw new DOMException(`webnn-py: the Python runtime did not load: ${failures.join("; ")}`, "NotSupportedError");
    }
    if (config.debug) pyodide.setDebug(true);
    const loaded = pyodide.pyimport("webnn_py.browser.bridge");
    mark("import");
    const turnWords = loaded.install(unwrapForPython, config.timeSlice === undefined ? 8 : config.timeSlice, postTask(),
                                     config.strictBufferTypes === true, Float16ArrayCtor || Uint16ArrayCtor, wrapperProxyOf);
    PyProxy = pyodide.ffi.PyProxy;
    emscripten = pyodide._module;
    const schedule = pyodide._api.scheduleCallback;
    scheduleImmediate = typeof schedule === "function" ? (callback) => schedule(callback, 0) : (callback) => setTimer(callback, 0);
    turnWord = turnWords;
    // The bridge's functions, each looked up once: a PyProxy attribute read is a call
    // into Python (and a new proxy) on every use.
    bridge = { __proto__: null, ml: loaded.ml, construct: loaded.construct, invoke: loaded.invoke,
               invokePromise: loaded.invoke_promise, get: loaded.get, settle: loaded.settle,
               dispatch: loaded.dispatch, writeTensor: loaded.write_tensor,
               writeTensorBytes: loaded.write_tensor_bytes, readTensor: loaded.read_tensor,
               tensorMemory: loaded.tensor_memory };
    for (let i = 0; i < pendingML.length; i++) pendingML[i].proxy = bridge.ml;
    pendingML.length = 0;
    mark("ready");
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    global.console.debug(`webnn-py: Python runtime ready in ${seconds} s`);
    if (snapshots) snapshots.afterBoot(booted.snapshot);   // off the boot's path
  }

  // loadPyodide(), restoring dist/'s memory snapshot when there is one for this boot (see
  // memorySnapshots), else initialising Python. A snapshot that does not load boots Python
  // as if there had been none; `snapshot` in the result says what happened to it.
  async function startPyodide(loadPyodide, options, snapshot) {
    if (snapshot) {
      try {
        const pyodide = await withPyodideMessageFilter(() => loadPyodide(Object.assign({ _loadSnapshot: snapshot.bytes }, options)));
        mark("fromSnapshot");
        return { pyodide, snapshot: snapshot.kept ? "kept" : "fetched" };
      } catch (error) {
        global.console.warn(`webnn-py: the memory snapshot did not load (${error}); initialising Python`);
        return { pyodide: await withPyodideMessageFilter(() => loadPyodide(options)), snapshot: "failed" };
      }
    }
    return { pyodide: await withPyodideMessageFilter(() => loadPyodide(options)), snapshot: "none" };
  }

  // dist/ ships a Pyodide 0.27 memory snapshot (runtime-config.json "memorySnapshot": its file
  // and sha256; tools/dist_snapshot.mjs): Python's memory right after loadPyodide(), made at
  // build time, restored by `_loadSnapshot` instead of initialising the interpreter (what
  // numpy needs, an extension module, comes after it). It is 4 MB over the network, so a
  // first visit does not wait for it: after the boot it is fetched in the background and
  // kept in this origin's Cache Storage, and later visits restore it. A kept copy is used
  // only if its SHA-256 is the one runtime-config.json names (page script can write Cache
  // Storage; it cannot make other bytes match), and entries of other runtime folders are
  // deleted. JavaScriptCore (Safari, WebKitGTK) fetches it at boot, first visit included:
  // it has no code cache for wasm and runs the seconds of interpreter initialisation in its
  // lower tiers, which the 4 MB saves many times over (README "Use it in your page").
  // No Cache Storage (an opaque origin) or WebCrypto: nothing is kept. The page opts out
  // with webnnPolyfillConfig.memorySnapshot = false. A runtime whose pages each start with
  // empty storage (wpt_runner: no origin storage may pass from one test to the next) says
  // `atBoot: true` (fetch it at boot in every engine) and `keep: false` (never read or write
  // Cache Storage); the HTTP cache may still hold it, as it holds the runtime's other files.
  function memorySnapshots(entry) {
    if (!entry || typeof entry.file !== "string" || !/^[\w.-]+$/.test(entry.file) ||
        typeof entry.integrity !== "string" || !/^sha256-[A-Za-z0-9+/]{43}=$/.test(entry.integrity)) return null;
    const url = pyodideURL + entry.file;
    const storage = entry.keep !== false && global.caches && typeof global.caches.open === "function" ? global.caches : null;
    const atBoot = entry.atBoot === true || isJavaScriptCore();
    const subtle = global.crypto && global.crypto.subtle;
    const open = () => storage.open("webnn-py-memory-snapshots");
    const fetched = () => fetch(url, { integrity: entry.integrity })
      .then((response) => (response.ok ? response.arrayBuffer() : null)).then((buffer) => (buffer ? new Uint8Array(buffer) : null));
    const kept = () => (storage && subtle ? open().then((cache) => cache.match(url))
      .then((response) => (response ? response.arrayBuffer() : null))
      .then((buffer) => (buffer ? subtle.digest("SHA-256", buffer).then((digest) =>
        (base64(new Uint8Array(digest)) === entry.integrity.slice(7) ? new Uint8Array(buffer) : null)) : null))
      .catch(() => null) : Promise.resolve(null));
    return {
      // null (boot without), or {bytes: the bytes or a promise of them, kept: whether they came
      // from Cache Storage}. At boot the promise comes at once, before its fetch ends:
      // loadPyodide() takes it as `_loadSnapshot` and starts its own fetches (pyodide.asm.js
      // and .wasm, the standard library) meanwhile (they waited for the 4 MB before); no bytes
      // (a failed fetch) reject it, and Python boots without the snapshot.
      forBoot: () => {
        if (!atBoot) return kept().then((bytes) => (bytes ? { bytes, kept: true } : null));
        const plan = { bytes: null, kept: false };
        plan.bytes = kept().then((bytes) => {
          if (bytes) {
            plan.kept = true;
            return bytes;
          }
          return fetched().then((b) => b || promiseReject(new Error(`${entry.file} was not fetched`)));
        });
        plan.bytes.catch(() => undefined);   // reported by startPyodide
        return Promise.resolve(plan);
      },
      afterBoot: (outcome) => {
        if (!storage || outcome === "kept") return;
        if (outcome === "failed") {   // this engine cannot restore it: stop trying
          open().then((cache) => cache.delete(url)).catch(() => undefined);
          return;
        }
        fetched().then((bytes) => bytes && open().then((cache) => cache.put(url, new Response(bytes)).then(() => cache.keys())
          .then((keys) => {
            for (let i = 0; i < keys.length; i++) {
              if (keys[i].url !== url && keys[i].url.endsWith("/" + entry.file)) cache.delete(keys[i]);
            }
          }))).catch(() => undefined);
      },
    };
  }

  function isJavaScriptCore() {
    const agent = global.navigator && typeof global.navigator.userAgent === "string" ? global.navigator.userAgent : "";
    return /AppleWebKit\//.test(agent) && !/(Chrome|Chromium|Edg)\//.test(agent);
  }

  function base64(bytes) {
    let text = "";
    for (let i = 0; i < bytes.length; i++) text += String.fromCharCode(bytes[i]);
    return global.btoa(text);
  }

  // For a config without sitePackages (the wheels then go through loadPackage(); else
  // fetchStoredWheels fetches them): runtime-config.json names the package files
  // loadPackage() asks for after loadPyodide() resolved, with the integrity loadPackage()'s fetch carries (the lock's
  // sha256; tools/build_dist.py): fetched now, while Pyodide starts, so they are there by
  // then (dist/ serves them immutable). In windows a preload hint, which the browser hands
  // to that fetch (no body passes through script, and a repeat visit's cached copy costs
  // nothing; no integrity attribute: Chromium ignores it on fetch preloads, with a warning;
  // tests/dist/test_preload.py); in workers, which have no document, fetch() with the
  // integrity. Best effort: a failure shows again, reported, in loadPackage().
  function prefetch(entries) {
    if (!Array.isArray(entries)) return;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i];
      if (!entry || typeof entry.file !== "string" || !/^[\w.+-]+$/.test(entry.file)) continue;
      const integrity = typeof entry.integrity === "string" ? entry.integrity : "";
      if (isWindow) {
        const link = document.createElement("link");
        link.rel = "preload";
        link.as = "fetch";
        link.crossOrigin = "anonymous";   // the mode and credentials of loadPackage()'s fetch
        link.href = pyodideURL + entry.file;
        document.head.appendChild(link);
      } else {
        fetch(pyodideURL + entry.file, integrity ? { integrity } : {})
          .then((response) => response.arrayBuffer()).catch(() => undefined);
      }
    }
  }

  // dist/'s runtime-config.json lists the extension modules (wasm side modules) that
  // tools/build_dist.py took out of the wheels, each with its place in site-packages. Each is
  // fetched and compiled by streaming now, while loadPyodide() runs: the engine compiles it
  // as it arrives, off the main thread, and can keep the code for the next visit (V8's code
  // cache takes streamed, cacheable responses), where Pyodide would compile the bytes it
  // unpacked from the wheel, on every visit. A host that does not send application/wasm
  // gets the module compiled from its bytes.
  function compileSideModules(entries) {
    const compiled = [];
    if (!Array.isArray(entries)) return compiled;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i];
      if (!entry || typeof entry.file !== "string" || !/^[\w.+-]+\.wasm$/.test(entry.file) ||
          typeof entry.path !== "string" || !/^\/lib\/python3\.\d+\/site-packages\/[\w./-]+\.so$/.test(entry.path) ||
          entry.path.indexOf("..") !== -1) continue;
      const url = pyodideURL + entry.file;
      const init = typeof entry.integrity === "string" ? { integrity: entry.integrity } : {};
      const fromBytes = () => fetch(url, init).then((response) => {
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        return response.arrayBuffer();
      }).then((bytes) => apply(wasmCompile, WebAssemblyObject, [bytes]));
      const module = wasmCompileStreaming
        ? apply(wasmCompileStreaming, WebAssemblyObject, [fetch(url, init)]).catch(fromBytes) : fromBytes();
      module.catch(() => undefined);   // reported by linkSideModules
      compiled.push({ file: entry.file, path: entry.path, module });
    }
    return compiled;
  }

  // dist/'s wheels are stored zips (no compression: tools/dist_trim.py) of pure Python and
  // data (their extension modules are side modules): unpacked here, in JavaScript, straight
  // into site-packages (runtimeConfig.sitePackages), instead of by Pyodide's loadPackage(),
  // whose unpacking is Python code (zipfile), slow in an engine's lower tiers (JavaScriptCore
  // spent seconds there). fetchStoredWheels() starts their fetches as soon as the config is
  // there, with the lock's integrity, so they arrive while loadPyodide() runs; the shim reads
  // the bodies itself, so no preload hint is needed (WebKit did not hand the preloaded
  // response to a fetch carrying an integrity, and fetched each wheel twice). null when the
  // config names no sitePackages: then loadPackage() fetches them, after a preload hint.
  function fetchStoredWheels(runtimeConfig) {
    const wheels = runtimeConfig.prefetch, sitePackages = runtimeConfig.sitePackages;
    if (!Array.isArray(wheels) || !wheels.length || typeof sitePackages !== "string" ||
        !/^\/lib\/python3\.\d+\/site-packages\/$/.test(sitePackages)) return null;
    const archives = Promise.all(arrayMap(wheels, (entry) => {
      if (!entry || typeof entry.file !== "string" || !/^[\w.+-]+$/.test(entry.file)) {
        return promiseReject(new DOMException("webnn-py: the Python runtime did not load: a wheel without a file name", "NotSupportedError"));
      }
      const init = typeof entry.integrity === "string" ? { integrity: entry.integrity } : {};
      return fetch(pyodideURL + entry.file, init)
        .then((response) => (response.ok ? response.arrayBuffer() : promiseReject(`HTTP ${response.status}`)))
        .catch((error) => promiseReject(new DOMException(`webnn-py: the Python runtime did not load: ${entry.file}: ${error}`,
                                                         "NotSupportedError")));
    }));
    archives.catch(() => undefined);   // reported when the boot awaits them
    return archives;
  }

  // Writes the wheels' files into site-packages; false (nothing written) if any entry is
  // compressed or otherwise not a plain stored file: the caller then uses loadPackage().
  // What Pyodide's installer adds (INSTALLER, loadedPackages) nothing here reads.
  function unpackStoredWheels(pyodide, sitePackages, archives) {
    const files = [];
    for (let i = 0; i < archives.length; i++) {
      const entries = storedZipEntries(new Uint8Array(archives[i]));
      if (!entries) return false;
      for (let j = 0; j < entries.length; j++) files.push(entries[j]);
    }
    for (let i = 0; i < files.length; i++) {
      const path = sitePackages + files[i].name;
      pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
      pyodide.FS.writeFile(path, files[i].data);
    }
    // The import system's view of site-packages: the folder's path finder caches its listing
    // (the build snapshot's, or an empty folder's), so it is told to read it again. Only that
    // one: importlib.invalidate_caches() would also make every zipimporter of the standard
    // library read its zip's directory again (in Python) and import importlib.metadata (27
    // modules: email, csv, datetime, ...) to clear a cache nothing here reads: 0.7 s in WebKit.
    const scope = pyodide.toPy({ folder: sitePackages.slice(0, -1) });
    try {
      pyodide.runPython("finder = __import__('sys').path_importer_cache.get(folder)\n" +
                        "if finder is not None: finder.invalidate_caches()", { globals: scope });
    } finally {
      scope.destroy();
    }
    return true;
  }

  // The files of a zip whose entries are all stored (method 0), from its central directory;
  // null for anything else (compressed entries, zip64, a name leaving the folder).
  function storedZipEntries(bytes) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let end = -1;
    for (let i = bytes.length - 22; i >= 0 && i >= bytes.length - 22 - 65535; i--) {
      if (view.getUint32(i, true) === 0x06054b50) { end = i; break; }
    }
    if (end < 0) return null;
    const count = view.getUint16(end + 10, true);
    let at = view.getUint32(end + 16, true);
    const names = new TextDecoder();
    const files = [];
    for (let i = 0; i < count; i++) {
      if (at + 46 > bytes.length || view.getUint32(at, true) !== 0x02014b50) return null;
      const method = view.getUint16(at + 10, true), size = view.getUint32(at + 20, true);
      const nameLength = view.getUint16(at + 28, true), skip = view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
      const local = view.getUint32(at + 42, true);
      const name = names.decode(bytes.subarray(at + 46, at + 46 + nameLength));
      at += 46 + nameLength + skip;
      if (name.endsWith("/")) continue;
      if (method !== 0 || size === 0xffffffff || name.startsWith("/") || name.indexOf("..") !== -1 ||
          local + 30 > bytes.length || view.getUint32(local, true) !== 0x04034b50) return null;
      const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
      if (start + size > bytes.length) return null;
      files.push({ name, data: bytes.subarray(start, start + size) });
    }
    return files;
  }

  // Link the compiled side modules into Pyodide the way Emscripten links preloaded ones
  // (its preload plugin): instantiated by its dynamic linker (loadWebAssemblyModule: memory,
  // table slots, relocations, constructors) and kept in `preloadedWasm` under their path,
  // where Python's dlopen() at `import` finds them. The file at that path, which the import
  // system looks for, stays empty: the module is already there.
  async function linkSideModules(pyodide, compiled) {
    const emscripten = pyodide._module;
    const linker = emscripten && typeof emscripten.loadWebAssemblyModule === "function" && emscripten.preloadedWasm;
    for (let i = 0; i < compiled.length; i++) {
      const side = compiled[i];
      let module;
      try {
        module = await side.module;
      } catch (error) {
        throw new DOMException(`webnn-py: the Python runtime did not load: ${side.file}: ${error}`, "NotSupportedError");
      }
      const folder = side.path.slice(0, side.path.lastIndexOf("/"));
      pyodide.FS.mkdirTree(folder);
      if (!linker) {
        // A Pyodide without Emscripten's linker on its module: the bytes at their place,
        // for dlopen() to compile at import.
        pyodide.FS.writeFile(side.path, new Uint8Array(await fetch(pyodideURL + side.file).then((r) => r.arrayBuffer())));
        continue;
      }
      const flags = { loadAsync: true, nodelete: true, allowUndefined: true };
      emscripten.preloadedWasm[side.path] = await emscripten.loadWebAssemblyModule(module, flags, side.path, {});
      pyodide.FS.writeFile(side.path, new Uint8Array(0));
    }
  }

  // Pyodide's runtime listens for "message" events on the global scope to run its own
  // tasks (Emscripten's setImmediate: "_si"; its call_soon: "pyodide-<n>"), and any frame
  // may post a page a message: a foreign "_si" made Emscripten's listener call an empty
  // queue (an uncaught TypeError). While Pyodide loads, its listeners (known by name)
  // are registered through a filter that passes only messages this global posted
  // itself (and runs them guarded: they enter Python); the page's own listeners are
  // untouched.
  const PYODIDE_MESSAGE_LISTENERS = ["__setImmediate_cb", "Browser_setImmediate_messageHandler", "onGlobalMessage"];
  async function withPyodideMessageFilter(load) {
    const filtered = {
      addEventListener(type, listener, options) {
        let registered = listener;
        if (type === "message" && typeof listener === "function" && arrayIncludes(PYODIDE_MESSAGE_LISTENERS, listener.name)) {
          registered = function (event) {
            if (isWindow && messageSource(event) === global) return guarded(callListener, listener, this, event);
          };
        }
        return listen(this === undefined || this === null ? global : this, type, registered, options);
      },
    }.addEventListener;
    defineProperty(global, "addEventListener", { value: filtered, writable: true, configurable: true, enumerable: true });
    try {
      return await load();
    } finally {
      const now = getOwnPropertyDescriptor(global, "addEventListener");
      if (now && now.value === filtered) delete global.addEventListener;
    }
  }

  function callWithoutArguments(callback) {   // a Python callable counts its arguments
    return callback();
  }

  function callListener(listener, self, event) {
    return apply(listener, self, [event]);
  }

  // Boot phases as User Timing marks ("webnn-py:boot", …, "webnn-py:ready"), for
  // bench/cold_start.py and the browser's performance panel. Best effort: a page
  // that replaced `performance` loses only the marks.
  function mark(phase) {
    try { performance.mark("webnn-py:" + phase); } catch (e) { /* no User Timing */ }
  }

  // Later tasks of ours (a dispatch's next slice, the end of a turn) go through the scheduler's
  // postTask, captured at load, at the configured priority; null: Pyodide's own immediate task
  // (postTask: "pyodide", or no scheduler.postTask, as in WebKit).
  const taskOptions = (config.postTask || "user-visible") !== "pyodide" && schedulerPostTask
    ? { __proto__: null, priority: config.postTask || "user-visible" } : null;

  // The next slice of a dispatch runs in a new task (README "Responsiveness"). The
  // scheduler's postTask gets a closure, never Python's callback.
  function postTask() {
    if (taskOptions === null) return undefined;   // Pyodide's own call_soon: postMessage / MessageChannel, not clamped
    return (callback) => {
      apply(schedulerPostTask, schedulerObject, [() => { if (fatalError === null) guarded(callWithoutArguments, callback); }, taskOptions]);
    };
  }

  // ---- the end of the caller's turn -------------------------------------------------------
  //
  // The dispatch()es one task starts share one slice of work (README "Responsiveness"), so
  // Python's timelines must learn when the task is over. A timeline that starts a turn sets
  // a word in Python's memory (webnn_py/runtime/timeline.py, set_turn_words); when the call
  // into Python returns, the shim clears it and posts a task of its own that counts itself in
  // the next word, which the timelines read at their next start: no call into Python for it.
  let turnWord = 0;              // the words' index in HEAPU32 once booted; 0: none
  let scheduleImmediate = null;  // Pyodide's own later task (its call_soon's), captured at boot

  function endTurnIfAsked() {
    const words = emscripten.HEAPU32;
    if (words[turnWord] === 0) return;
    words[turnWord] = 0;
    try {
      if (taskOptions !== null) {
        apply(schedulerPostTask, schedulerObject, [countTurnTask, taskOptions]);
      } else {
        // As the slices without postTask: in WebKit a MessageChannel's message comes after the
        // page's setTimeout(0), so a page's next task would find the turn still going on.
        scheduleImmediate(countTurnTask);
      }
    } catch (error) {
      // A scheduler the page replaced before the shim loaded (or its postMessage, which
      // Pyodide's task calls) threw: the API call's outcome stands, and the turn ends with the
      // timeline's next task instead (Timeline._run_slice).
    }
  }

  function countTurnTask() {
    if (fatalError === null) emscripten.HEAPU32[turnWord + 1]++;    // wraps at 2**32, as Python's != allows
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

  // ---- built-ins a page replaced are put back while the runtime works ----------------------
  //
  // Pyodide's JS glue looks built-ins up when it runs (Array.prototype.push to convert a
  // string, Array.prototype.some in `instanceof PyProxy`, Function.prototype.apply to call
  // a JS function with Python objects as arguments, ...). So that a page's replacement
  // neither breaks it nor is handed a Python object, every entry into the runtime (an API
  // call, a scheduled slice, a settled promise) swaps the originals captured at load back
  // in for its duration, and the page's own versions back out after: one compiled
  // comparison of them all when nothing was replaced. Not swapped: what WebIDL conversions call
  // observably in native implementations too (@@iterator and iterators' next, valueOf,
  // toString, @@toPrimitive), so page code the conversions run sees its own versions.
  // A property's descriptor that inherits nothing: page script may give Object.prototype a
  // "get" or "value" of its own, which a descriptor handed to defineProperty would inherit.
  function descriptorOf(owner, key) {
    const descriptor = getOwnPropertyDescriptor(owner, key);
    if (descriptor !== undefined) setPrototypeOf(descriptor, null);
    return descriptor;
  }

  const PRISTINE = [];   // [owner, key, original descriptor]
  (function capturePristine() {
    const TypedArrayPrototype = getPrototypeOf(Uint8Array.prototype);
    const owners = [
      [global, ["Array", "Object", "Function", "Reflect", "Proxy", "Promise", "Symbol", "Map", "Set", "WeakMap", "WeakSet",
                "WeakRef", "Error", "TypeError", "RangeError", "DOMException", "ArrayBuffer", "SharedArrayBuffer", "DataView",
                "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
                "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array", "BigInt", "Number", "String", "JSON",
                "Math", "WebAssembly", "TextDecoder", "TextEncoder", "setTimeout", "clearTimeout", "queueMicrotask",
                "MessageChannel", "Atomics", "Blob", "URL", "performance"]],
      [Array, ["from", "isArray", "of"]],
      [Array.prototype, ["push", "pop", "shift", "unshift", "slice", "splice", "map", "filter", "forEach", "some", "every",
                         "find", "findIndex", "includes", "indexOf", "lastIndexOf", "join", "concat", "reduce", "sort",
                         "reverse", "fill", "at", "flat", "keys", "values", "entries"]],
      [Object, ["defineProperty", "defineProperties", "getOwnPropertyDescriptor", "getOwnPropertyDescriptors",
                "getOwnPropertyNames", "getOwnPropertySymbols", "getPrototypeOf", "setPrototypeOf", "create", "assign",
                "keys", "values", "entries", "fromEntries", "freeze", "isFrozen", "seal", "is", "hasOwn"]],
      [Object.prototype, ["hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable"]],
      [Function.prototype, ["apply", "call", "bind"]],
      [Reflect, ["apply", "construct", "defineProperty", "deleteProperty", "get", "getOwnPropertyDescriptor",
                 "getPrototypeOf", "has", "isExtensible", "ownKeys", "preventExtensions", "set", "setPrototypeOf"]],
      [Promise, ["resolve", "reject", "all", "race", "allSettled"]],
      [Promise.prototype, ["then", "catch", "finally"]],
      [String, ["fromCharCode", "fromCodePoint"]],
      [String.prototype, ["split", "trim", "slice", "substring", "indexOf", "lastIndexOf", "startsWith", "endsWith",
                          "replace", "replaceAll", "match", "includes", "charCodeAt", "codePointAt", "toLowerCase",
                          "toUpperCase", "padStart", "concat", "normalize"]],
      [RegExp.prototype, ["exec", "test", Symbol.match, Symbol.matchAll, Symbol.replace, Symbol.search, Symbol.split]],
      [Map.prototype, ["get", "set", "has", "delete", "clear", "forEach"]],
      [Set.prototype, ["add", "has", "delete", "clear", "forEach"]],
      [WeakMap.prototype, ["get", "set", "has", "delete"]],
      [WeakSet.prototype, ["add", "has", "delete"]],
      [JSON, ["parse", "stringify"]],
      [Symbol, ["for", "keyFor"]],
      [Number, ["isInteger", "isSafeInteger", "isFinite", "isNaN"]],
      [TypedArrayPrototype, ["set", "subarray", "slice", "fill", "buffer", "byteOffset", "byteLength", "length"]],
      [ArrayBuffer, ["isView"]],
      [ArrayBuffer.prototype, ["slice", "byteLength"]],
      [Error, ["captureStackTrace"]],
      // The kernels: their instantiation is handed Pyodide's memory, and the kernel pool
      // (webnn_py/kernels/pool.js) starts workers from a Blob URL and spins on Atomics
      // with a performance.now() deadline. (Not the global Worker: the policy section below
      // replaces it with its own wrapper after this capture, and a pristine entry that never
      // matches would send every call down the slow path; pool.js ignores the wrapper's port.)
      [WebAssembly, ["Module", "Instance", "Memory", "compile", "instantiate", "compileStreaming",
                     "instantiateStreaming", "validate"]],
      [typeof Atomics === "object" ? Atomics : {}, ["load", "store", "add", "sub", "exchange", "compareExchange",
                                                   "wait", "notify"]],
      [URL, ["createObjectURL", "revokeObjectURL"]],
      [typeof Performance === "function" ? Performance.prototype : {}, ["now"]],
    ];
    for (let i = 0; i < owners.length; i++) {
      const owner = owners[i][0], keys = owners[i][1];
      for (let j = 0; j < keys.length; j++) {
        const descriptor = descriptorOf(owner, keys[j]);
        if (descriptor && descriptor.configurable) arrayPush(PRISTINE, [owner, keys[j], descriptor]);
      }
    }
  })();

  // Nothing replaced since load? One function that reads every guarded property by name,
  // compiled here from PRISTINE: named loads are a field read each (~0.05 us for all of
  // them), where a loop of keyed loads over ~20 owners took 5-15 us per call. Pyodide's
  // bridge evaluates JavaScript itself (run_js), so a page whose CSP forbids that cannot
  // run the runtime anyway; without Function, the loop below serves.
  const lookupGetter = uncurry(Object.prototype.__lookupGetter__);
  const unchangedSinceLoad = (function compileCheck() {
    const owners = [], symbols = [], values = [];
    const ownerIndex = new Map(), terms = [];
    for (let i = 0; i < PRISTINE.length; i++) {
      const owner = PRISTINE[i][0], key = PRISTINE[i][1], original = PRISTINE[i][2];
      if (!ownerIndex.has(owner)) { ownerIndex.set(owner, owners.length); arrayPush(owners, owner); }
      const o = `o[${ownerIndex.get(owner)}]`;
      let k;
      if (typeof key === "symbol") { k = `s[${symbols.length}]`; arrayPush(symbols, key); } else { k = JSON.stringify(key); }
      arrayPush(values, original.get === undefined ? original.value : original.get);
      // A getter is compared without calling it: __lookupGetter__ finds the accessor (or
      // undefined for a data property) where the lookup would.
      arrayPush(terms, original.get === undefined ? `${o}[${k}] === v[${i}]` : `lookupGetter(${o}, ${k}) === v[${i}]`);
    }
    try {
      const check = new Function("o", "s", "v", "lookupGetter", `"use strict"; return () => ${terms.join(" &&\n")};`);  // eslint-disable-line no-new-func
      return check(owners, symbols, values, lookupGetter);
    } catch (e) {
      return () => false;   // no eval here: always the property-by-property comparison below
    }
  })();

  // Properties page script adds to Array.prototype or Object.prototype reach more than a
  // replaced built-in does: a setter at "0" is handed each element Pyodide's glue pushes
  // into an array it makes (the arguments of every call from Python into JavaScript, PyProxies
  // of the runtime's objects among them), a setter on Object.prototype each value it sets
  // under that key on an object it makes. While Python runs they are taken off, as replaced
  // built-ins are put back; the keys these prototypes had at load are theirs. Array.prototype
  // is itself an array: an index added to it raises its length, which is all the per-call
  // check reads of it (its ~40 keys listed each call cost ~1 µs in Chromium).
  const ArrayPrototype = Array.prototype, ObjectPrototype = Object.prototype;
  const INHERITED = [[ArrayPrototype, ownKeys(ArrayPrototype)], [ObjectPrototype, ownKeys(ObjectPrototype)]];
  const OBJECT_PROTOTYPE_KEYS = INHERITED[1][1];
  function prototypesAsLoaded() {
    if (ArrayPrototype.length !== 0) return false;
    const now = ownKeys(ObjectPrototype);
    if (now.length !== OBJECT_PROTOTYPE_KEYS.length) return false;
    for (let j = 0; j < now.length; j++) if (now[j] !== OBJECT_PROTOTYPE_KEYS[j]) return false;
    return true;
  }

  // Takes the page's additions off (see INHERITED); what to put back, or null. One the page
  // made unconfigurable cannot come off: the call is refused rather than made beside it.
  function takeOffAdditions() {
    let added = null;
    for (let i = 0; i < INHERITED.length; i++) {
      const owner = INHERITED[i][0], keys = INHERITED[i][1], now = ownKeys(owner);
      for (let j = 0; j < now.length; j++) {
        if (arrayIncludes(keys, now[j])) continue;
        const descriptor = descriptorOf(owner, now[j]);
        if (!descriptor.configurable || !deleteProperty(owner, now[j])) {
          putBack(added);
          const name = typeof now[j] === "symbol" ? "a symbol-keyed property" : `"${now[j]}"`;
          throw new TypeErrorCtor(`webnn-py: page script made ${name} of a built-in prototype unconfigurable; ` +
                                  "the API cannot run beside it");
        }
        // defineElement, not push: a setter of the page's may still be on Array.prototype.
        if (!added) added = [];
        defineElement(added, added.length, [owner, now[j], descriptor]);
      }
    }
    return added;
  }

  function putBack(added) {
    if (!added) return;
    for (let i = added.length - 1; i >= 0; i--) defineProperty(added[i][0], added[i][1], added[i][2]);
  }

  let guardDepth = 0;
  function guarded(operation, a, b, c, d) {
    if (guardDepth > 0) return operation(a, b, c, d);
    if (unchangedSinceLoad() && prototypesAsLoaded()) {
      guardDepth++;
      try {
        return operation(a, b, c, d);
      } finally {
        guardDepth--;
        if (turnWord !== 0) endTurnIfAsked();
      }
    }
    // The page's additions come off first, so that what follows inherits none of them.
    const added = takeOffAdditions();
    let swapped = null;
    try {
      for (let i = 0; i < PRISTINE.length; i++) {
        const entry = PRISTINE[i], owner = entry[0], key = entry[1], original = entry[2];
        if (original.get === undefined ? owner[key] === original.value
                                       : (getOwnPropertyDescriptor(owner, key) || {}).get === original.get) continue;
        const now = descriptorOf(owner, key);
        if (!defineProperty(owner, key, original)) continue;   // made unconfigurable: nothing to do
        if (!swapped) swapped = [];
        arrayPush(swapped, [owner, key, now]);
      }
      guardDepth++;
      try {
        return operation(a, b, c, d);
      } finally {
        guardDepth--;
        if (turnWord !== 0) endTurnIfAsked();
      }
    } finally {
      restorePageVersions(swapped);
      putBack(added);
    }
  }

  function restorePageVersions(swapped) {
    if (!swapped) return;
    for (let i = swapped.length - 1; i >= 0; i--) {
      const owner = swapped[i][0], key = swapped[i][1], pageVersion = swapped[i][2];
      if (pageVersion) defineProperty(owner, key, pageVersion);
      else delete owner[key];
    }
  }

  // ---- wrappers: one JS object per Python object -------------------------------------------
  //
  // Every WebNN method that returns an interface object returns a new one, so a
  // Python object reaches JS once and gets exactly one wrapper; the wrapper owns
  // the PyProxy, which Pyodide releases when the wrapper is garbage-collected.
  // The brand is the wrapper's entry in this closure's table, which no page script
  // can read or write (a registered symbol on the object could be forged by anyone).

  let PyProxy = null;
  const brands = new WeakMapCtor();   // wrapper -> { type: interface name, proxy: its PyProxy, realm }
  const pendingML = [];               // ML entries waiting for the runtime's ML object
  const FAILURE_TYPE = "BridgeFailure";  // PyProxy.type is the Python class name
  const PENDING_TYPE = "PendingPromise";  // bridge.read_tensor's promise not settled yet

  // A new wrapper of `proxy` in `realm` (a frame's interface objects; see connect()).
  // A realm that did not register the interface's prototype (connect() takes what a
  // realm offers) gets an error, never the PyProxy itself.
  function wrap(realm, proxy) {
    const proto = realm.prototypes[proxy.type];
    if (!proto) {
      const type = proxy.type;
      proxy.destroy();
      throw new DOMExceptionCtor(`webnn-py: internal error: a ${type} for a realm without the ${type} interface`,
                                 "OperationError");
    }
    const wrapper = ObjectCreate(proto);
    weakMapSet(brands, wrapper, { type: proxy.type, proxy, realm });
    return wrapper;
  }

  // Handed to Python: the Python object behind a wrapper, or undefined. Pyodide
  // consumes (destroys) a PyProxy that a JS function returns to Python, so the
  // wrapper hands out a copy and keeps its own.
  function unwrapForPython(value) {
    const entry = weakMapGet(brands, value);
    return entry && entry.proxy ? entry.proxy.copy() : undefined;
  }

  // Handed to Python as well, for the WebIDL helper that reads a record of interface
  // objects in one call: the PyProxy a wrapper of `interfaceName` (or of an interface
  // inheriting from it) owns, itself, or undefined. The helper only puts it in an array
  // that Python converts, which does not consume it (as with wrapper arguments).
  function wrapperProxyOf(value, interfaceName) {
    const entry = value !== null && typeof value === "object" ? weakMapGet(brands, value) : undefined;
    return entry && entry.proxy && inherits(entry.type, interfaceName) ? entry.proxy : undefined;
  }

  function implOf(self, interfaceName, member) {
    const entry = weakMapGet(brands, self);
    if (entry && inherits(entry.type, interfaceName)) {
      if (!entry.proxy) throw new TypeErrorCtor(`Failed to execute '${member}' on '${interfaceName}': the WebNN runtime is not ready`);
      return entry.proxy;
    }
    throw new TypeErrorCtor(`Failed to execute '${member}' on '${interfaceName}': Illegal invocation`);
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

  // A bridge result: a JS value, a PyProxy of an API object (wrapped in `realm`), of an
  // awaitable (returned as is), or of a Failure (thrown as the JS error it names).
  function unpack(result, realm) {
    // No object, no PyProxy (writeTensor(), dispatch()): answered without Pyodide's
    // `instanceof PyProxy`, which allocates.
    if (result === undefined || result === null || (typeof result !== "object" && typeof result !== "function")) return result;
    // sequence<MLOperand> results (split, lstm, gru) arrive as arrays of PyProxies.
    if (ArrayIsArray(result) && PyProxy && arraySome(result, (item) => item instanceof PyProxy)) {
      return arrayMap(result, (item) => unpack(item, realm));
    }
    if (!(PyProxy && result instanceof PyProxy)) return result;
    if (result.type === FAILURE_TYPE) {
      // `thrown`: page script threw during the call (a getter, a Proxy trap, an iterator,
      // valueOf/toString): rethrown as the same value, as WebIDL's "?" steps say.
      const thrown = result.thrown;
      const error = thrown ? thrown.value : toError(result.name, result.message);
      result.destroy();
      throw error;
    }
    return wrap(realm, result);
  }

  // The bridge result of a promise member: a Python awaitable, returned as it is for
  // toPromise() (it is no API object: nothing to wrap), or a failure, thrown.
  function unpackAwaitable(result, realm) {
    if (PyProxy && result instanceof PyProxy && result.type !== FAILURE_TYPE) return result;
    return unpack(result, realm);
  }

  // A promise for a Python awaitable, made here: the bridge settles it through one of two
  // functions, `resolve` with a JS value (an ArrayBuffer, a dictionary, undefined) or
  // `fromPython` with a Python object (an API object to wrap in `realm`, or a failure to
  // reject with as its JS error). It calls them from Python, as the outcome is known:
  // within the API call itself when the work ran at once (readTensor() on an idle
  // timeline), so the page's await continues in this task's microtasks.
  function toPromise(awaitable, realm, lost) {
    try {
      return settledByPython(realm, (resolve, fromPython) => bridge.settle(awaitable, resolve, fromPython), lost);
    } finally {
      awaitable.destroy();
    }
  }

  // A new promise, which `start(resolve, fromPython)` hands to Python to settle. Until
  // Python settles it, it is in `unsettled` (for failRuntime, under its number); `lost`:
  // it is an MLContext's lost promise.
  const unsettled = { __proto__: null };
  let promisesMade = 0;
  function settledByPython(realm, start, lost) {
    let resolve, reject;
    const promise = new PromiseCtor((resolveWith, rejectWith) => { resolve = resolveWith; reject = rejectWith; });
    const id = ++promisesMade;
    unsettled[id] = { __proto__: null, resolve, reject, lost: lost === true };
    start((value) => { delete unsettled[id]; resolve(value); },
          (outcome) => { delete unsettled[id]; guarded(settleFromPython, outcome, realm, resolve, reject); });
    return promise;
  }

  // ---- a failed runtime ------------------------------------------------------------------
  //
  // Pyodide cannot go on once a JS exception has unwound through Python's C frames (its
  // "fatal error": e.g. a stack overflow inside a call from a page that recursed almost to
  // the engine's limit): Python's state is then undefined, and a call may return nothing as
  // if it had run. The shim stops calling into it. Every context is lost (§8.3.9, the
  // implementation-defined message naming the error), the promises Python was to settle are
  // rejected with an "InvalidStateError" (those of a lost context's steps, §8.3.4 step 3),
  // and every later call fails the same way: nothing waits for ever, and nothing pretends
  // to have run.
  //
  // Pyodide 0.27 sends every such error through its internal API.fatal_error, looked up as
  // it is called (with one that is no failure: a NoGilError, which it rethrows); its own
  // on_fatal hook comes after a report that itself overflows at the depth of a stack
  // overflow, so the shim's wrapper records the error before anything else and settles the
  // promises from a microtask, or at the next call.
  function watchForFatalErrors(api) {
    const pyodideFatalError = api && api.fatal_error;
    if (typeof pyodideFatalError !== "function") return;
    const NoGilError = typeof api.NoGilError === "function" ? api.NoGilError : null;
    api.fatal_error = (error) => {
      try {
        if (!(NoGilError && error instanceof NoGilError)) failRuntime(error);
      } finally {
        pyodideFatalError(error);
      }
    };
  }

  function failRuntime(error) {
    if (fatalError !== null) return;
    fatalError = { __proto__: null, error, message: undefined };
    promiseThen(promiseResolve(), settleUnsettled);
  }

  function settleUnsettled() {
    const ids = ownKeys(unsettled);
    for (let i = 0; i < ids.length; i++) {
      const entry = unsettled[ids[i]];
      delete unsettled[ids[i]];
      if (entry.lost) entry.resolve(lostInfo());
      else entry.reject(runtimeFailedError(""));
    }
  }

  function runtimeFailure() {
    if (fatalError.message === undefined) {
      const error = fatalError.error;
      let cause;
      try {
        cause = `${error}`;
      } catch (e) {
        cause = "an error";
      }
      fatalError.message = `webnn-py's Python runtime failed (${cause}) and can no longer be used`;
    }
    return fatalError.message;
  }

  function lostInfo() {
    return { message: runtimeFailure() };   // MLContextLostInfo
  }

  function runtimeFailedError(member) {
    return new DOMExceptionCtor(member ? `${member}: ${runtimeFailure()}` : runtimeFailure(), "InvalidStateError");
  }

  // What a member of an object of the failed runtime does instead of calling Python.
  function runtimeFailedOutcome(member, kind) {
    settleUnsettled();
    if (member === "lost") return promiseResolve(lostInfo());
    if (kind.promise) return promiseReject(runtimeFailedError(member));
    throw runtimeFailedError(member);
  }

  // `outcome` is borrowed for this call: a wrapper keeps its own copy.
  function settleFromPython(outcome, realm, resolve, reject) {
    let value;
    try {
      value = outward(unpack(outcome.copy(), realm));
    } catch (error) {
      reject(error);
      return;
    }
    resolve(value);
  }

  // What leaves the runtime is a JS value or a wrapper, never a PyProxy.
  function outward(value) {
    if (PyProxy && value instanceof PyProxy) {
      value.destroy();
      throw new DOMExceptionCtor("webnn-py: internal error: a Python object without an interface", "OperationError");
    }
    return value;
  }

  // Pyodide 0.27 cannot proxy a Float16Array (converting one throws "Unknown typed
  // array type"), so a Float16Array reaches Python as a Uint16Array over the same bytes:
  // the float16 rules take those as bit patterns (§12.1 note), and readTensor() writes
  // through it into the caller's memory. An argument that is a Float16Array is replaced;
  // one inside a dictionary, record or sequence (MLModel.compute()'s inputs) is replaced
  // as Python reads it: objects reach Python behind a Proxy whose only trap is `get`, so
  // every other operation (ownKeys, getters, their order and count, what they throw) is
  // the page object's own. Wrappers and views pass as they are.
  //
  // A wrapper argument is handed over as the PyProxy it owns, which Python receives as the
  // object itself: no JsProxy to make, no call back into unwrapForPython (Pyodide does not
  // consume a PyProxy that is an argument). Wrappers inside dictionaries, records and
  // sequences are still unwrapped by Python, as it reads them.
  //
  // Only an argument whose IDL type can hold a buffer inside it (`nested`: a flag per
  // argument, from MEMBERS; null: any) gets that Proxy: dispatch()'s records of tensors,
  // say, reach Python as they are.
  //
  // The list is filled by defining its elements: no setter a page put on Array.prototype,
  // and no species constructor (Array.prototype.map would ask for one), sees a PyProxy.
  function argumentsForPython(args, nested) {
    const out = [];
    for (let i = 0; i < args.length; i++) {
      defineElement(out, i, argumentForPython(args[i], nested === null || i >= nested.length || nested[i]));
    }
    return out;
  }

  function defineElement(array, index, value) {
    defineProperty(array, index, { __proto__: null, value, writable: true, enumerable: true, configurable: true });
  }

  // A bridge function called as fn(...leading, null, ...arguments for Python): Pyodide
  // converts each argument as it converts a call's (no JS array to proxy, no helper to run
  // in Python). A BigInt would arrive as a plain int that way, so when one is among them
  // the arguments go as one JS array instead, fn(...leading, [arguments]), which the
  // bindings' helper reads with BigInts marked (bridge.invoke, script_arguments).
  function callBridge(fn, leading, args, nested) {
    const values = argumentsForPython(args, nested);
    let bigint = false;
    for (let i = 0; i < values.length; i++) if (typeof values[i] === "bigint") bigint = true;
    const list = [];
    for (let i = 0; i < leading.length; i++) defineElement(list, i, leading[i]);
    defineElement(list, leading.length, bigint ? values : null);
    if (!bigint) for (let i = 0; i < values.length; i++) defineElement(list, leading.length + 1 + i, values[i]);
    return apply(fn, undefined, list);
  }

  function argumentForPython(value, nested) {
    const entry = value !== null && typeof value === "object" ? weakMapGet(brands, value) : undefined;
    if (entry && entry.proxy) return entry.proxy;
    if (!Float16ArrayCtor) return value;
    if (nested) return forPython(value);
    return isView(value) && value instanceof Float16ArrayCtor ? float16Bits(value) : value;
  }

  function forPython(value) {
    if (value === null || typeof value !== "object") return value;
    if (isView(value)) return value instanceof Float16ArrayCtor ? float16Bits(value) : value;
    if (weakMapHas(brands, value) || isBuffer(value)) return value;
    return new ProxyCtor(value, FLOAT16_AS_BITS);
  }

  const FLOAT16_AS_BITS = {
    __proto__: null,
    get(target, key) {
      return forPython(reflectGet(target, key, target));
    },
  };

  // WebKitGTK 2.50 has no SharedArrayBuffer global, even in a cross-origin isolated page, yet
  // shared wasm memory hands out real SharedArrayBuffers: their prototype is found through
  // one (as the bindings' buffer conversions find it), so that such a buffer passes as one.
  const SharedArrayBufferPrototype = typeof SharedArrayBuffer === "function" ? SharedArrayBuffer.prototype
    : sharedMemoryBufferPrototype();
  function sharedMemoryBufferPrototype() {
    try {
      return getPrototypeOf(new WebAssembly.Memory({ initial: 0, maximum: 0, shared: true }).buffer);
    } catch (e) {
      return null;   // no shared memory at all
    }
  }
  const SharedArrayBufferGrowable = SharedArrayBufferPrototype && getter(SharedArrayBufferPrototype, "growable");
  const BUFFER_SIZE = [getter(ArrayBuffer.prototype, "byteLength")];
  if (SharedArrayBufferPrototype) arrayPush(BUFFER_SIZE, getter(SharedArrayBufferPrototype, "byteLength"));
  function isBuffer(value) {   // the getters' brand checks read internal slots only
    try {
      // An Array is no buffer: answered without the failing brand checks below, whose
      // throws cost more than the rest of a builder call (a revoked Proxy throws here).
      if (ArrayIsArray(value)) return false;
    } catch (e) {
      return false;
    }
    for (let i = 0; i < BUFFER_SIZE.length; i++) {
      try {
        BUFFER_SIZE[i](value);
        return true;
      } catch (e) { /* not this kind of buffer */ }
    }
    return false;
  }

  function float16Bits(view) {
    try {
      return new Uint16ArrayCtor(typedArrayBuffer(view), typedArrayByteOffset(view), typedArrayLength(view));
    } catch (error) {
      return new Uint16ArrayCtor(0);   // a detached buffer: zero bytes, as WebIDL sees it
    }
  }

  function isPromiseType(type) {
    return regexpExec(/^Promise</, type) !== null;
  }

  // ---- the port: a realm's way into the runtime ----------------------------------------------
  //
  // connect({prototypes, ml, allowed}) registers a realm's interface prototypes (results
  // are wrapped with them), brands its navigator.ml, and returns the operations its
  // interface objects forward to. Every operation takes a wrapper and a member named by
  // the IDL, checks the wrapper's brand and the member here, and returns what the public
  // API returns: page script that got hold of a port (a same-origin frame can) can do no
  // more with it than with the API itself. Python objects never leave this closure.

  // (used by nestedBufferArguments below)
  const BUFFER_TYPE_NAMES = ["ArrayBuffer", "SharedArrayBuffer", "ArrayBufferView", "BufferSource",
                             "AllowSharedBufferSource", "DataView", "any", "object"];
  const MEMBERS = ObjectCreate(null);   // interface -> member -> { attribute, promise, nested }
  (function indexMembers() {
    const names = ownKeys(IDL.interfaces);
    for (let i = 0; i < names.length; i++) {
      const meta = IDL.interfaces[names[i]], members = ObjectCreate(null);
      for (let j = 0; j < meta.operations.length; j++) {
        const op = meta.operations[j];
        members[op.name] = { attribute: false, promise: isPromiseType(op.overloads[0].returnType),
                             nested: nestedBufferArguments(op.overloads) };
      }
      for (let j = 0; j < meta.attributes.length; j++) {
        const attr = meta.attributes[j];
        members[attr.name] = { attribute: true, promise: isPromiseType(attr.type) };
      }
      MEMBERS[names[i]] = members;
    }
  })();

  // Per argument position: can a buffer be found *inside* the argument (a dictionary,
  // record, sequence or union member of a buffer type, `any` or `object`)? Read from the
  // IDL's type names, typedefs and dictionaries followed; any doubt counts as yes.
  function nestedBufferArguments(overloads) {
    const nested = [];
    for (let i = 0; i < overloads.length; i++) {
      const args = overloads[i].arguments;
      for (let j = 0; j < args.length; j++) {
        const holds = args[j].variadic || mayHoldBuffer(args[j].type, []);
        if (holds || nested.length <= j) nested[j] = holds || nested[j] === true;
      }
    }
    return nested;
  }

  function mayHoldBuffer(type, seen) {
    const names = type.match(/[A-Za-z_]\w*/g) || [];
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      if (arrayIncludes(BUFFER_TYPE_NAMES, name) || /^(Big)?(Int|Uint|Float)\d+(Clamped)?Array$/.test(name)) return true;
      if (arrayIncludes(seen, name)) continue;
      arrayPush(seen, name);
      if (IDL.typedefs[name] && mayHoldBuffer(IDL.typedefs[name], seen)) return true;
      for (let d = IDL.dictionaries[name]; d; d = d.inherits && IDL.dictionaries[d.inherits]) {
        for (let m = 0; m < d.members.length; m++) if (mayHoldBuffer(d.members[m].type, seen)) return true;
      }
    }
    return false;
  }

  function memberOf(interfaceName, member, attribute) {
    const members = typeof interfaceName === "string" && MEMBERS[interfaceName];
    const kind = members && typeof member === "string" && members[member];
    if (!kind || kind.attribute !== attribute) throw new TypeErrorCtor(`'${String(member)}' is not a member of WebNN's IDL`);
    return kind;
  }

  let localRealm = null;   // the realm of this script's own interface objects, when it runs the runtime

  function connect(descriptor, own) {
    const realm = { prototypes: ObjectCreate(null), allowed: null, contexts: [], detached: false };
    if (own) localRealm = realm;
    const names = ownKeys(MEMBERS);
    for (let i = 0; i < names.length; i++) {
      const proto = descriptor.prototypes[names[i]];
      if (proto !== null && typeof proto === "object") realm.prototypes[names[i]] = proto;
    }
    realm.allowed = descriptor.allowed;
    const ml = descriptor.ml;
    if (ml !== null && typeof ml === "object" && !weakMapHas(brands, ml)) {
      const entry = { type: "ML", proxy: bridge ? bridge.ml : null, realm };
      weakMapSet(brands, ml, entry);
      if (!bridge) arrayPush(pendingML, entry);
    }
    return ObjectFreeze({
      __proto__: null,
      boot,
      construct: (target, name, args) => guarded(constructIn, realm, target, name, args),
      invoke: (self, interfaceName, member, args) => guarded(invokeIn, self, interfaceName, member, args),
      get: (self, interfaceName, attribute) => guarded(getIn, self, interfaceName, attribute),
      describeError,
      forward,
      detach: () => guarded(detach, realm),
    });
  }

  function constructIn(realm, target, name, args) {
    const meta = typeof name === "string" && MEMBERS[name] ? IDL.interfaces[name] : null;
    if (!meta || !meta.ctor || target === null || typeof target !== "object" || weakMapHas(brands, target)) {
      throw new TypeErrorCtor("Illegal constructor");
    }
    if (!bridge) throw new TypeErrorCtor(`Failed to construct '${name}': the WebNN runtime is not ready`);
    if (fatalError !== null) throw runtimeFailedError(`Failed to construct '${name}'`);
    const result = bridge.construct(name, argumentsForPython(arraySlice(args), null));
    if (result.type === FAILURE_TYPE) unpack(result, realm);   // throws
    weakMapSet(brands, target, { type: result.type, proxy: result, realm });
  }

  // Results are wrapped in the realm of the object the member was called on (its
  // "relevant realm"); errors are made here and turned into the caller's by its facade.
  let destroyEpoch = 0;   // destroy() calls so far (readTensor's lane checks it)
  function invokeIn(self, interfaceName, member, args) {
    if (member === "destroy") destroyEpoch++;
    const entry = weakMapGet(brands, self);
    if (interfaceName === "ML" && member === "createContext" && entry && entry.type === "ML") {
      try {
        return createContextFor(entry, args);   // waits for the runtime
      } catch (error) {
        return promiseReject(error);
      }
    }
    // A promise operation's promise is made here and settled by Python in the same call
    // (bridge.invoke_promise): no awaitable comes back to wrap and hand over again.
    return callMember(self, interfaceName, member, false, (impl, kind, realm) => {
      const lane = interfaceName === "MLContext" ? TENSOR_LANES[member] : undefined;
      if (lane !== undefined) {
        const outcome = lane(impl, kind, realm, args);
        if (outcome !== GENERAL) return outcome;
      }
      return kind.promise
        ? settledByPython(realm, (resolve, fromPython) =>
          callBridge(bridge.invokePromise, [resolve, fromPython, impl, member], arraySlice(args), kind.nested))
        : callBridge(bridge.invoke, [impl, member], arraySlice(args), kind.nested);
    });
  }

  // ---- MLContext's tensor operations: the calls a page makes every frame --------------------
  //
  // writeTensor(), dispatch() and readTensor() skip the general path's overload resolution
  // and argument conversion in Python (most of a round trip's cost, issue 17 item 2) for
  // what a native binding converts without running page code: a tensor or graph argument
  // that is one of our wrappers (the brand table: nothing page-visible), and dispatch()'s
  // records, read here exactly as the bindings' record conversion reads them. A buffer
  // argument is still converted by the bindings (bridge.write_tensor / read_tensor). A
  // lane returns GENERAL, before any page-visible step, for anything else (too few
  // arguments, a non-wrapper): the general path then converts, and throws, as always.
  const GENERAL = { __proto__: null };

  // MLNamedTensors (record<USVString, MLTensor>) as the bindings read a record of interface
  // objects (webidl.py, "platformRecord"): Object.keys, then one Get per key, nothing after
  // a value that is no MLTensor (its conversion throws). What page code throws (a getter,
  // a Proxy trap) is thrown. Each name and the tensor's PyProxy go to `list` (an argument
  // list: a null-prototype array-like, so no setter a page put on Array.prototype sees a
  // PyProxy) from `list.length` on. `complete`: every value an MLTensor and every name a
  // valid USVString already; else recordOf() makes what the general path converts.
  const LONE_SURROGATE = /[\uD800-\uDFFF]/;
  function readNamedTensors(record, list) {
    if (record === null || (typeof record !== "object" && typeof record !== "function")) {
      return { complete: false, record, names: null, values: null, read: 0 };
    }
    const names = ObjectKeys(record);
    const values = { __proto__: null };
    let complete = true, i = 0;
    while (i < names.length) {
      const name = names[i], value = reflectGet(record, name, record);
      values[i++] = value;
      const proxy = wrapperProxyOf(value, "MLTensor");
      if (proxy === undefined) { complete = false; break; }
      if (regexpExec(LONE_SURROGATE, name) !== null) complete = false;
      list[list.length] = name;
      list[list.length + 1] = proxy;
      list.length += 2;
    }
    return { complete, record, names, values, read: i };
  }

  // What the general path converts in place of a record readNamedTensors() read:
  // the record itself when it is not an object (nothing was read), else a plain object of
  // the names and values read, which its conversion reads without running page code.
  function recordOf(read) {
    if (read.names === null) return read.record;
    const copy = ObjectCreate(null);
    for (let i = 0; i < read.read; i++) {
      defineProperty(copy, read.names[i], { __proto__: null, value: read.values[i], writable: true, enumerable: true, configurable: true });
    }
    return copy;
  }

  function tensorDestroyed(tensorWrapper) {
    const proxy = wrapperProxyOf(tensorWrapper, "MLTensor");
    return proxy === undefined || proxy._is_destroyed === true;
  }

  // writeTensor()'s inputData when the bindings' conversion (AllowSharedBufferSource:
  // webidl.convert_buffer) takes it as it is: a typed array on a fixed-length buffer that is
  // not detached. Read with the getters captured at load (nothing page script can change or
  // observe), it goes to bridge.write_tensor_bytes as the Uint8Array over exactly its bytes
  // that the conversion would make, its type's name and whether its buffer is shared: that
  // saves the conversion's call back into JavaScript (~10 us in Pyodide, issue 17). Anything
  // else (a DataView, a buffer, a resizable, growable or detached one, an engine without these
  // getters) gives undefined and is converted by the bindings.
  function fixedTypedArray(value) {
    if (!arrayBufferResizable || !arrayBufferDetached || !isView(value)) return undefined;
    const name = typedArrayName(value);
    if (name === undefined) return undefined;           // a DataView
    const buffer = typedArrayBuffer(value);
    let shared = false;
    try {
      if (arrayBufferResizable(buffer) || arrayBufferDetached(buffer)) return undefined;
    } catch (e) {                                        // not an ArrayBuffer: a SharedArrayBuffer
      if (!SharedArrayBufferGrowable || SharedArrayBufferGrowable(buffer)) return undefined;
      shared = true;
    }
    const byteLength = typedArrayByteLength(value);
    return { __proto__: null, bytes: new Uint8ArrayCtor(buffer, typedArrayByteOffset(value), byteLength),
             byteLength, name, shared };
  }

  // ---- Tensor memory: writes and reads without a call into Python ----------------------------
  //
  // When Python's words in its memory say so (webnn_py/browser/tensor_memory.py: the
  // context's timeline would run the step in the call, and the tensor is writable or
  // readable, not destroyed, its [[data]] `byteLength` bytes at `address`), writeTensor()
  // copies the page's bytes into [[data]] and readTensor() copies them out, here: what
  // Python's own steps would do in the call, without a crossing (~6-8 us each). Python
  // decides; this only reads the words, and asks Python in every other case. Each tensor's
  // record (which words, their serials, the view type taken as it is) is asked for once.
  const tensorRecords = new WeakMapCtor();   // MLTensor wrapper -> its record, or null
  const SLOT_FLAGS = 1, SLOT_ADDRESS = 2, SLOT_BYTES = 3;   // words of a slot after its serial
  const TIMELINE_READY = 1, TENSOR_READABLE = 1, TENSOR_WRITABLE = 2;

  // The tensor's record when `context` may use `access` of it now, else null.
  function usableRecord(context, tensorWrapper, tensor, access) {
    let record = weakMapGet(tensorRecords, tensorWrapper);
    if (record === undefined) {
      const words = bridge.tensorMemory(context, tensor);
      if (words === 0) return null;     // another context's tensor: Python's steps throw
      record = words === null || words === undefined ? null : {
        __proto__: null, context, contextWord: words[0], contextSerial: words[1],
        word: words[2], serial: words[3], viewType: words[4], snapshot: null, snapshotHeld: false };
      weakMapSet(tensorRecords, tensorWrapper, record);
    }
    if (record === null || record.context !== context) return null;
    const words = emscripten.HEAPU32, at = record.word;
    if (words[record.contextWord] !== record.contextSerial || words[record.contextWord + SLOT_FLAGS] !== TIMELINE_READY
        || words[at] !== record.serial || (words[at + SLOT_FLAGS] & access) === 0) return null;
    return record;
  }

  // Whether Python's steps take `view` as it is for the record's tensor: its byte length, and
  // Uint8Array or the tensor's own type (MLContext._write_tensor; §8.3 "validate buffer with
  // descriptor"). Anything else is validated by Python.
  function takesAsItIs(record, view) {
    return emscripten.HEAPU32[record.word + SLOT_BYTES] === view.byteLength
      && (view.name === "Uint8Array" || view.name === record.viewType);
  }

  // writeTensor(tensor, view) done here (true), or not (false: ask Python).
  function writeInPlace(context, tensorWrapper, tensor, view) {
    const record = usableRecord(context, tensorWrapper, tensor, TENSOR_WRITABLE);
    if (record === null || !takesAsItIs(record, view)) return false;
    typedArraySet(emscripten.HEAPU8, view.bytes, emscripten.HEAPU32[record.word + SLOT_ADDRESS]);
    return true;
  }

  // A copy of the record's [[data]]: in `into` when it has the tensor's byte length, else in a
  // new Uint8Array; undefined when that cannot be allocated (a RangeError: Python's steps then
  // reject with the spec's error).
  function copyOfData(record, into) {
    const words = emscripten.HEAPU32, n = words[record.word + SLOT_BYTES];
    let out = into;
    if (out === null || typedArrayByteLength(out) !== n) {
      try {
        out = new Uint8ArrayCtor(n);
      } catch (error) {
        return undefined;
      }
    }
    typedArraySet(out, new Uint8ArrayCtor(typedArrayBuffer(emscripten.HEAPU8), words[record.word + SLOT_ADDRESS], n));
    return out;
  }

  // A read's promise: its timeline step has run in the call, but it settles in a later ML
  // task (§8.3.4 step 8.1.3, §8.3.5 step 9.1.3), so that a destroy() of the tensor or its
  // context called before then rejects it (§8.8.2 step 2): held back for a microtask, and
  // rejected if a destroy() came in between and the tensor is now destroyed; else `settle()`.
  // `release()`, if given, is called when the promise settles, either way.
  function settledAfterDestroys(tensorWrapper, settle, release) {
    const epoch = destroyEpoch;
    return promiseThen(promiseResolve(), () => {
      try {
        if (destroyEpoch !== epoch && guarded(tensorDestroyed, tensorWrapper)) {
          throw new DOMExceptionCtor("readTensor: the tensor was destroyed", "InvalidStateError");
        }
        return settle();
      } finally {
        if (release !== undefined) release();
      }
    });
  }

  // readTensor(tensor) (outputData undefined) or readTensor(tensor, outputData) done here: the
  // promise, or undefined: ask Python. [[data]] is copied now (the timeline step, §8.3.4 step
  // 8.1.1 / §8.3.5 step 9.1.1); outputData is written when the promise settles, unless its
  // buffer was detached meanwhile (§8.3.5 step 9.1.3.2).
  function readInPlace(context, tensorWrapper, tensor, outputData) {
    const view = outputData === undefined ? null : fixedTypedArray(outputData) || fixedArrayBuffer(outputData);
    if (view === undefined) return undefined;
    const record = usableRecord(context, tensorWrapper, tensor, TENSOR_READABLE);
    if (record === null || (view !== null && !takesAsItIs(record, view))) return undefined;
    if (view === null) {
      const bytes = copyOfData(record, null);
      return bytes === undefined ? undefined : settledAfterDestroys(tensorWrapper, () => typedArrayBuffer(bytes));
    }
    // Into outputData, the snapshot goes through the record's own copy, kept for the tensor's
    // next such read: a new buffer each time cost ~17 us of a 16 KB read in Chromium (fresh
    // memory's page faults), as much as the caller's own buffer was meant to save. A read of
    // the tensor still pending holds it: the next one, in the meantime, gets a new buffer.
    const reuse = !record.snapshotHeld;
    const bytes = copyOfData(record, reuse ? record.snapshot : null);
    if (bytes === undefined) return undefined;
    if (reuse) {
      record.snapshot = bytes;
      record.snapshotHeld = true;
    }
    return settledAfterDestroys(tensorWrapper, () => {
      if (typedArrayByteLength(view.bytes) !== view.byteLength) {
        throw new TypeErrorCtor("readTensor: outputData's buffer has been detached");
      }
      typedArraySet(view.bytes, bytes);
      return undefined;
    }, reuse ? () => { record.snapshotHeld = false; } : undefined);
  }

  // An ArrayBuffer of fixed length, not detached, as fixedTypedArray() gives a view: a
  // Uint8Array over all its bytes, which Python's steps take as they are whatever the tensor's
  // type (a buffer that is no view); undefined for anything else (a SharedArrayBuffer, whose
  // getters throw on it, included: Python converts those).
  function fixedArrayBuffer(value) {
    if (!arrayBufferResizable || !arrayBufferDetached || value === null || typeof value !== "object" || isView(value)) return undefined;
    try {
      if (arrayBufferResizable(value) || arrayBufferDetached(value)) return undefined;
    } catch (e) {
      return undefined;
    }
    const bytes = new Uint8ArrayCtor(value);
    return { __proto__: null, bytes, byteLength: typedArrayByteLength(bytes), name: "Uint8Array", shared: false };
  }

  const TENSOR_LANES = {
    __proto__: null,
    writeTensor(impl, kind, realm, args) {
      const tensor = args.length >= 2 ? wrapperProxyOf(args[0], "MLTensor") : undefined;
      if (tensor === undefined) return GENERAL;
      const data = argumentForPython(args[1], kind.nested[1]);
      const view = fixedTypedArray(data);
      if (view === undefined) {
        const buffer = fixedArrayBuffer(data);
        return buffer !== undefined && writeInPlace(impl, args[0], tensor, buffer) ? undefined : bridge.writeTensor(impl, tensor, data);
      }
      if (writeInPlace(impl, args[0], tensor, view)) return undefined;
      return bridge.writeTensorBytes(impl, tensor, view.bytes, view.byteLength, view.name, view.shared);
    },
    readTensor(impl, kind, realm, args) {
      // readTensor(tensor) for one argument; with two or more, the overload that takes
      // outputData (an undefined one fails its conversion: the general path says so).
      const tensor = args.length >= 1 ? wrapperProxyOf(args[0], "MLTensor") : undefined;
      if (tensor === undefined || (args.length >= 2 && args[1] === undefined)) return GENERAL;
      const outputData = args.length === 1 ? undefined : argumentForPython(args[1], kind.nested[1]);
      const read = readInPlace(impl, args[0], tensor, outputData);
      if (read !== undefined) return read;
      // The outcome comes back from the call when the read ran at once (an idle timeline),
      // else a PendingPromise that is handed the new promise's resolvers.
      const outcome = args.length === 1 ? bridge.readTensor(impl, tensor) : bridge.readTensor(impl, tensor, outputData);
      if (PyProxy && outcome instanceof PyProxy && outcome.type === PENDING_TYPE) {
        try {
          return settledByPython(realm, (resolve, fromPython) => outcome.hand_resolvers(resolve, fromPython));
        } finally {
          outcome.destroy();
        }
      }
      let value;
      try {
        value = outward(unpack(outcome, realm));
      } catch (error) {
        return promiseReject(error);
      }
      return settledAfterDestroys(args[0], () => value);
    },
    dispatch(impl, kind, realm, args) {
      const graph = args.length >= 3 ? wrapperProxyOf(args[0], "MLGraph") : undefined;
      if (graph === undefined) return GENERAL;
      // bridge.dispatch(context, graph, input count, name, tensor, ..., name, tensor, ...)
      const list = { __proto__: null, 0: impl, 1: graph, 2: 0, length: 3 };
      const inputs = readNamedTensors(args[1], list);
      list[2] = (list.length - 3) / 2;
      const outputs = inputs.complete ? readNamedTensors(args[2], list) : null;
      if (outputs === null || !outputs.complete) {
        // A record WebIDL's conversion rejects (or whose names need USVString's
        // replacements): the general path converts what was read, and throws as always.
        const read = [args[0], recordOf(inputs), outputs === null ? args[2] : recordOf(outputs)];
        return callBridge(bridge.invoke, [impl, "dispatch"], read, kind.nested);
      }
      return apply(bridge.dispatch, undefined, list);
    },
  };

  function getIn(self, interfaceName, attribute) {
    return callMember(self, interfaceName, attribute, true, (impl, kind, realm) => {
      const outcome = bridge.get(impl, attribute);
      if (!kind.promise) return outcome;
      let awaitable;
      try {
        awaitable = unpackAwaitable(outcome, realm);
      } catch (error) {
        return promiseReject(error);
      }
      return toPromise(awaitable, realm, attribute === "lost");
    });
  }

  // A promise-typed member reports every error as a rejected promise (WebIDL §3.7.6).
  function callMember(self, interfaceName, member, attribute, call) {
    const kind = memberOf(interfaceName, member, attribute);
    let impl;
    try {
      impl = implOf(self, interfaceName, member);
    } catch (error) {
      if (kind.promise) return promiseReject(error);
      throw error;
    }
    if (fatalError !== null) return runtimeFailedOutcome(member, kind);
    const realm = weakMapGet(brands, self).realm;
    const outcome = call(impl, kind, realm);
    return kind.promise ? outcome : outward(unpack(outcome, realm));   // a promise: made by `call`
  }

  // §8.2.2 createContext() step 2: the SecurityError comes from the policy of the ML
  // object's own document (its realm), whichever realm's method was called.
  function createContextFor(mlEntry, args) {
    const home = mlEntry.realm;
    if (home.detached) return promiseReject(notFullyActive("createContext"));
    if (fatalError !== null) return promiseReject(noContextError());
    const decided = new PromiseCtor((resolve) => apply(home.allowed, undefined, [resolve]));
    // A frame's realm reports its own policy through connect(), which page script of this
    // document can call too (with an `allowed` that always says yes): so another realm is
    // allowed only where this document, the runtime's, is as well. Honest frames lose
    // nothing: a frame's policy never allows more than its parent's (§7.5, inherited policy).
    const ownDecision = home === localRealm ? promiseResolve(true) : decision();
    return promiseThen(promiseThen(promiseThen(ownDecision, (ownAllowed) => promiseThen(decided,
        (allowed) => ownAllowed === true && allowed === true)), (allowed) => {
      if (allowed !== true) {
        throw new DOMExceptionCtor("createContext: the \"webnn\" permissions policy does not allow WebNN " +
                                   "in this document", "SecurityError");
      }
      return boot();
    }), () => promiseThen(guarded(newContext, mlEntry, args), (context) => {
      guarded(trackContext, home, context);
      return context;
    }));
  }

  function newContext(mlEntry, args) {
    const home = mlEntry.realm;
    if (fatalError !== null) throw noContextError();
    const outcome = bridge.invoke(mlEntry.proxy, "createContext", argumentsForPython(arraySlice(args), null));
    return toPromise(unpackAwaitable(outcome, home), home);
  }

  function noContextError() {
    settleUnsettled();
    return new DOMExceptionCtor(`createContext: ${runtimeFailure()} (load the page again)`, "NotSupportedError");
  }

  function notFullyActive(member) {
    return new DOMExceptionCtor(`${member}: the document of this navigator.ml is no longer active`, "InvalidStateError");
  }

  // A frame's contexts are lost when its document goes away (the frame is removed or
  // navigated), as a native implementation loses them with the document; the runtime,
  // shared with the rest of the frame tree, keeps running.
  function trackContext(realm, context) {
    if (realm.detached) {
      destroyContext(context);
    } else if (realm !== localRealm) {
      arrayPush(realm.contexts, WeakRefCtor ? new WeakRefCtor(context) : context);
    }
  }

  function detach(realm) {
    if (realm.detached || realm === localRealm) return;
    realm.detached = true;
    const contexts = realm.contexts;
    realm.contexts = [];
    for (let i = 0; i < contexts.length; i++) {
      const context = WeakRefCtor ? weakRefDeref(contexts[i]) : contexts[i];
      if (context) destroyContext(context);
    }
  }

  function destroyContext(context) {
    const entry = weakMapGet(brands, context);
    if (!entry || !entry.proxy || fatalError !== null) return;
    const outcome = bridge.invoke(entry.proxy, "destroy", []);
    if (PyProxy && outcome instanceof PyProxy) outcome.destroy();
  }

  // Settles a frame's promise with one of the runtime's. The reactions are this realm's
  // functions: a removed frame's realm runs no more promise jobs of its own (Firefox
  // follows HTML there), and its contexts' `lost` must still resolve.
  function forward(promise, resolve, reject) {
    promiseThen(promise, (value) => { resolve(value); }, (error) => { reject(error); });
  }

  // Errors made here belong to this realm; a frame's interface objects rethrow them as
  // their own realm's TypeError / DOMException (a page's own exception passes as it is).
  function describeError(error) {
    if (error instanceof TypeErrorCtor) return { name: "TypeError", message: error.message };
    if (error instanceof DOMExceptionCtor) return { name: error.name, message: error.message };
    return null;
  }

  // ---- sharing the runtime with same-origin frames ---------------------------------------------
  //
  // One Python runtime per same-origin frame tree: a frame whose parent (same origin,
  // same polyfill assets) already has one connects to it instead of booting its own, so
  // objects work across the frames' realms, as native platform objects do (a page may
  // build with a context its iframe created), and a frame costs no second Pyodide. The
  // parent offers {pyodideURL, connect} under a registered symbol (a cross-origin parent
  // throws on access); connect() gives only the port above, so page script that calls it
  // gains nothing it could not do through the API (README "Security model").
  const RUNTIME = Symbol.for("webnn-py runtime");

  function parentRuntime() {
    if (!isWindow || global.parent === global) return null;
    try {
      const shared = global.parent[RUNTIME];
      return shared && shared.pyodideURL === pyodideURL && typeof shared.connect === "function" ? shared : null;
    } catch (e) {
      return null;   // a cross-origin parent
    }
  }

  // ---- this realm's interface objects ------------------------------------------------------
  //
  // They hold no Python object: each operation and attribute forwards to the port of
  // the runtime (this script's own, or a same-origin parent frame's), which checks the
  // brand. Errors and promises from a parent frame's runtime are turned into this
  // realm's, as a native implementation creates them in the method's realm.

  let port = null;               // set below, before any interface object can be called
  let foreignRuntime = false;    // the runtime lives in another realm (a same-origin parent frame)

  function localError(error) {
    if (!foreignRuntime) return error;
    const described = port.describeError(error);
    if (!described) return error;
    return described.name === "TypeError" ? new TypeErrorCtor(described.message)
                                          : new DOMExceptionCtor(described.message, described.name);
  }

  function callPort(operation, self, interfaceName, member, args) {
    try {
      return operation(self, interfaceName, member, args);
    } catch (error) {
      throw localError(error);
    }
  }

  function promiseFromPort(operation, self, interfaceName, member, args) {
    let promise;
    try {
      promise = operation(self, interfaceName, member, args);
    } catch (error) {
      return promiseReject(localError(error));
    }
    if (!foreignRuntime) return promise;
    return new PromiseCtor((resolve, reject) => {
      port.forward(promise, resolve, (error) => reject(localError(error)));
    });
  }

  const interfaces = {};        // name -> interface object (constructor function)

  function defineInterface(meta) {
    const name = meta.name;
    const ctor = function () {
      if (!new.target) throw new TypeErrorCtor(`Failed to construct '${name}': Please use the 'new' operator.`);
      if (!meta.ctor) throw new TypeErrorCtor("Illegal constructor");
      if (policyAllowed === false) {
        // §8.9.1 step 1 (the only constructor WebNN has is MLGraphBuilder's).
        throw new DOMExceptionCtor(`Failed to construct '${name}': the "webnn" permissions policy does not allow WebNN ` +
                                   "in this document", "SecurityError");
      }
      callPort(port.construct, this, name, arraySlice(arguments));
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
          return promise ? promiseFromPort(port.invoke, this, name, op.name, args)
                         : callPort(port.invoke, this, name, op.name, args);
        },
      }[op.name];
      Object.defineProperty(method, "length", { value: op.length });
      Object.defineProperty(proto, op.name, { value: method, writable: true, enumerable: true, configurable: true });
    }

    for (const attr of meta.attributes) {
      const promiseCache = new WeakMapCtor();   // [SameObject]-like: one promise per wrapper
      const promise = isPromiseType(attr.type);
      const frozen = /^FrozenArray</.test(attr.type);
      const get = {
        [`get ${attr.name}`]() {
          if (promise) {
            let cached = weakMapGet(promiseCache, this);
            if (!cached) {
              cached = promiseFromPort(port.get, this, name, attr.name);
              if (this !== null && typeof this === "object") weakMapSet(promiseCache, this, cached);
            }
            return cached;
          }
          const value = callPort(port.get, this, name, attr.name);
          return frozen ? ObjectFreeze(value) : value;
        },
      }[`get ${attr.name}`];
      Object.defineProperty(proto, attr.name, { get, enumerable: true, configurable: true });
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
  // without the polyfill cannot vouch, so the frame is refused — for that call: a
  // question nobody answered is asked again by the next createContext(), and a
  // parent whose polyfill arrives late tells its frames to ask again. A dedicated
  // worker has its creator document's policy, which the polyfill in that document
  // hands it (see "workers" below).

  const POLICY_QUERY = "webnn-py:policy-query";
  const POLICY_ANSWER = "webnn-py:policy-answer";
  const POLICY_READY = "webnn-py:policy-ready";
  const WORKER_POLICY = "webnn-py:creator-policy";
  const WORKER_POLICY_REQUEST = "webnn-py:creator-policy-request";
  const NO_ANSWER_MS = 10000;   // then refuse this call (a parent or creator without the polyfill)
  let policyDecision = null;    // Promise<true | false | undefined>; undefined: nobody answered (yet)
  let policyAllowed = null;     // the definite answer once known, for the synchronous MLGraphBuilder check

  function decision() {
    if (!policyDecision) {
      const asked = policyDecision = promiseThen(decidePolicy(), (allowed) => {
        if (allowed === true || allowed === false) {
          policyAllowed = allowed;
          return allowed;
        }
        if (policyDecision === asked) policyDecision = null;   // ask again next time
        return undefined;
      });
    }
    return policyDecision;
  }

  // For a realm's createContext(): report(true) only if allowed.
  function reportAllowed(report) {
    promiseThen(decision(), (allowed) => report(allowed === true));
  }

  const POLICY_HOOK = Symbol.for("webnn-py:policy");  // same-origin frames ask through it
  const featurePolicy = isWindow && global.document.featurePolicy;
  const browserKnowsWebnn = !!featurePolicy && arrayIncludes(featurePolicy.features(), "webnn");
  const browserAllowsWebnn = browserKnowsWebnn && featurePolicy.allowsFeature("webnn");

  function decidePolicy() {
    if (isDedicatedWorker) return askCreator();
    if (!isWindow) return promiseResolve(true);   // shared and service workers: their own policy, 'self'
    if (browserKnowsWebnn) return promiseResolve(browserAllowsWebnn);
    return allowedIn(window);
  }

  function allowedIn(win) {
    if (win === win.parent) return promiseResolve(true);   // a top-level document
    let frame = null;
    try {
      frame = win.frameElement;
    } catch (e) { /* a cross-origin parent */ }
    if (!frame) return win === window ? askParent() : promiseResolve(false);
    if (!delegates(frame, win.location.origin, true)) return promiseResolve(false);
    const parentDecision = win.parent[POLICY_HOOK];
    return parentDecision ? parentDecision() : allowedIn(win.parent);
  }

  // Does <iframe allow="..."> grant "webnn" to `origin`? `byDefault` is what
  // applies without a webnn directive (the default allowlist 'self').
  function delegates(frame, origin, byDefault) {
    const directive = arrayFind(arrayMap(stringSplit(frame.getAttribute("allow") || "", ";"),
                                         (d) => stringSplit(stringTrim(d), /\s+/)),
                                (tokens) => tokens[0] === "webnn");
    if (!directive) return byDefault;
    const allowlist = arraySlice(directive, 1);
    if (allowlist.length === 0) arrayPush(allowlist, "'src'");
    return arraySome(allowlist, (item) => {
      if (item === "*") return true;
      if (item === "'none'") return false;
      if (item === "'self'") return origin === location.origin;
      // A sandboxed frame (no allow-same-origin) has an opaque origin, "null"; like
      // Chromium's own policy, 'src' still matches it.
      if (item === "'src'") return origin === new URL(frame.src, location.href).origin || opaqueSandboxed(frame, origin);
      try {
        return new URL(item).origin === origin;
      } catch (e) {
        return false;
      }
    });
  }

  function opaqueSandboxed(frame, origin) {
    if (origin !== "null" || !frame.hasAttribute("sandbox")) return false;
    return !arrayIncludes(stringSplit(stringTrim(frame.getAttribute("sandbox")), /\s+/), "allow-same-origin");
  }

  // Ask the parent's polyfill. Messages count only if the browser made them (isTrusted:
  // page script can dispatch a MessageEvent with any data and source) and come from
  // the parent; their fields are read with the getters captured at load.
  function askParent() {
    const parent = window.parent;
    return new PromiseCtor((resolve) => {
      let timer = null;
      const finish = (allowed) => {
        clearTimer(timer);
        unlisten(window, "message", onMessage);
        resolve(allowed);
      };
      const ask = () => parent.postMessage({ type: POLICY_QUERY }, "*");
      function onMessage(event) {
        if (!eventIsTrusted(event) || messageSource(event) !== parent) return;
        const data = messageData(event);
        if (data === null || typeof data !== "object") return;
        if (data.type === POLICY_ANSWER) finish(data.allowed === true);
        else if (data.type === POLICY_READY) ask();        // its polyfill arrived after our question
      }
      listen(window, "message", onMessage);
      timer = setTimer(() => finish(undefined), NO_ANSWER_MS);
      ask();
    });
  }

  function frameOf(source) {
    const frames = document.querySelectorAll("iframe, frame");
    for (let i = 0; i < frames.length; i++) if (frames[i].contentWindow === source) return frames[i];
    return null;
  }

  if (isWindow) {
    Object.defineProperty(window, POLICY_HOOK, { value: () => promiseThen(decision(), (allowed) => allowed === true) });
    // Answer our cross-origin frames' questions about their policy.
    listen(window, "message", (event) => {
      const data = eventIsTrusted(event) ? messageData(event) : null;
      if (data === null || typeof data !== "object" || data.type !== POLICY_QUERY) return;
      const source = messageSource(event), origin = messageOrigin(event);
      const frame = frameOf(source);
      if (!frame) return;
      promiseThen(decision(), (allowed) => {
        const answer = allowed === true && delegates(frame, origin, origin === location.origin);
        source.postMessage({ type: POLICY_ANSWER, allowed: answer }, origin === "null" ? "*" : origin);
      });
    });
    // Frames that asked before this script ran were not heard: tell them to ask again.
    for (let i = 0; i < window.length; i++) {
      try {
        window[i].postMessage({ type: POLICY_READY }, "*");
      } catch (e) { /* a frame going away */ }
    }
    decision();   // known before the page's next script runs (for top-level documents)
  }

  // ---- workers: a dedicated worker has its creator document's policy ----------------------
  //
  // The Worker constructor is wrapped: when this document is not known to be allowed
  // (a frame still asking, or refused), the worker's first message carries a private
  // MessagePort — page script gets the Worker object only afterwards, so nothing it
  // posts can come first — and the polyfill in the worker asks its creator's decision
  // on that port whenever it needs one. A worker of an allowed document gets no such
  // message (no worker code sees a stray message) and asks its creator for a port when
  // it needs a decision; the request and the reply are hidden from page listeners.
  // The polyfill in a worker refuses when no creator answers (its document did not run
  // this script). What remains forgeable is in the README's "Security model".

  function answerOn(channelPort) {
    listen(channelPort, "message", () => {
      promiseThen(decision(), (allowed) => portPostMessage(channelPort, { allowed: allowed === undefined ? null : allowed }));
    });
    portStart(channelPort);
  }

  function inheritPolicyInWorkers() {
    const NativeWorker = global.Worker;
    if (typeof NativeWorker !== "function" || !MessageChannelCtor) return;
    const postToWorker = uncurry(NativeWorker.prototype.postMessage);
    const sendPort = (worker) => {
      const channel = new MessageChannelCtor();
      answerOn(channel.port1);
      postToWorker(worker, { type: WORKER_POLICY }, [channel.port2]);
    };
    const Worker = function Worker(scriptURL) {   // eslint-disable-line no-unused-vars
      if (!new.target) {
        throw new TypeErrorCtor("Failed to construct 'Worker': Please use the 'new' operator, this DOM object " +
                                "constructor cannot be called as a function.");
      }
      const worker = construct(NativeWorker, arraySlice(arguments), new.target === Worker ? NativeWorker : new.target);
      if (policyAllowed !== true) sendPort(worker);
      listen(worker, "message", (event) => {
        const data = eventIsTrusted(event) ? messageData(event) : null;
        if (data === null || typeof data !== "object" || data.type !== WORKER_POLICY_REQUEST) return;
        stopImmediatePropagation(event);
        sendPort(worker);
      });
      return worker;
    };
    defineProperty(Worker, "prototype", { value: NativeWorker.prototype, writable: false });
    defineProperty(Worker, "length", { value: NativeWorker.length });
    setPrototypeOf(Worker, getPrototypeOf(NativeWorker));
    defineProperty(NativeWorker.prototype, "constructor", { value: Worker, writable: true, enumerable: false, configurable: true });
    defineProperty(global, "Worker", { value: Worker, writable: true, enumerable: false, configurable: true });
  }

  // In a dedicated worker: the first trusted WORKER_POLICY message brings the port. The
  // listener is in place before any message is dispatched (they wait for the worker's
  // script to have run), and stops the message from reaching the page's listeners.
  let creatorPort = null;   // Promise<MessagePort>
  let requestedPort = false;
  if (isDedicatedWorker && MessageChannelCtor) {
    creatorPort = new PromiseCtor((resolve) => {
      const onMessage = (event) => {
        const data = eventIsTrusted(event) ? messageData(event) : null;
        if (data === null || typeof data !== "object" || data.type !== WORKER_POLICY) return;
        const ports = messagePorts(event);
        if (ports.length !== 1) return;
        stopImmediatePropagation(event);
        resolve(ports[0]);   // the first one; later ones (answers to a request) are ignored
      };
      listen(global, "message", onMessage, true);
    });
  }

  function askCreator() {
    if (!creatorPort) return promiseResolve(false);
    if (!requestedPort) {
      requestedPort = true;
      // A creator that sent no port (it was allowed): ask for one. If a port is
      // already queued, it arrives first and this request's answer is ignored.
      global.postMessage({ type: WORKER_POLICY_REQUEST });
    }
    return new PromiseCtor((resolve) => {
      const timer = setTimer(() => resolve(undefined), NO_ANSWER_MS);
      promiseThen(creatorPort, (channelPort) => {
        const onAnswer = (event) => {
          unlisten(channelPort, "message", onAnswer);
          clearTimer(timer);
          const data = messageData(event);
          const allowed = data !== null && typeof data === "object" ? data.allowed : undefined;
          resolve(allowed === true || allowed === false ? allowed : undefined);
        };
        listen(channelPort, "message", onAnswer);
        portStart(channelPort);
        portPostMessage(channelPort, null);
      });
    });
  }

  inheritPolicyInWorkers();

  // ---- navigator.ml ([SameObject]): a wrapper of the Python ML whose Python object
  // arrives when the runtime has booted. createContext() waits for that.

  const ml = ObjectCreate(interfaces.ML.prototype);
  const prototypes = {};
  const names = Object.keys(interfaces);
  for (let i = 0; i < names.length; i++) prototypes[names[i]] = interfaces[names[i]].prototype;
  const realmDescriptor = { prototypes, ml, allowed: reportAllowed };
  const shared = parentRuntime();
  if (shared) {
    port = shared.connect(realmDescriptor);
    foreignRuntime = true;
    // This document going away (the frame removed or navigated) loses its contexts.
    listen(global, "pagehide", (event) => { if (!event.persisted) port.detach(); });
  } else {
    port = connect(realmDescriptor, true);
  }

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

  if (isWindow) {
    // What same-origin child frames find: the runtime's assets and connect(), nothing else
    // (a frame that uses its parent's runtime passes that on).
    Object.defineProperty(global, RUNTIME, {
      value: shared || ObjectFreeze({ __proto__: null, pyodideURL, connect: (descriptor) => connect(descriptor, false) }),
    });
  }

  // Start loading right away (pages that include the polyfill mean to use it),
  // unless asked to wait for the first createContext().
  if (isServiceWorker) {
    // importScripts() of new URLs is only allowed until the service worker is
    // installed: keep it installing until the runtime's scripts are in.
    global.addEventListener("install", (event) => event.waitUntil(port.boot()));
  } else if (!config.lazy) {
    promiseThen(port.boot(), undefined, (error) => global.console.error("webnn-py: failed to start", error));
  }
})(typeof globalThis !== "undefined" ? globalThis : self);
