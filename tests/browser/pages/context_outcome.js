// What navigator.ml.createContext() gave, as a structured-clonable record: the
// context's class, or the exception's name and message (policy_frame.html and
// security_policy_worker.js report it to the test).
async function createContextOutcome() {
  try {
    const context = await navigator.ml.createContext();
    return { ok: true, context: Object.prototype.toString.call(context) };
  } catch (e) {
    return { ok: false, name: e.name, message: e.message };
  }
}
