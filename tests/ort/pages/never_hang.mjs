// A failure inside ORT's wasm can leave its promise pending for ever: a test must
// fail instead, naming the call and showing what ORT printed last.
export function withinTime(promise, what, timeoutMs = 120000) {
  return Promise.race([
    promise,
    new Promise((resolve, reject) => setTimeout(() => {
      reject(new Error(`${what}: no result after ${timeoutMs} ms; ORT printed:\n` +
                       self.ortConsole.slice(-20).join("\n")));
    }, timeoutMs)),
  ]);
}
