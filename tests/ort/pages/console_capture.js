// ORT's C++ logs (logSeverityLevel 0) and its JS logs (env.logLevel) reach the
// console; keep them for the tests, which read node placements from them.
self.ortConsole = [];
for (const level of ["log", "info", "warn", "error", "debug"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    self.ortConsole.push(args.map(String).join(" "));
    original(...args);
  };
}
