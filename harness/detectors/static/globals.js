// What a page sees of whoever drives its browser: every own property of window, document and
// navigator that a fresh about:blank frame's do not have, and every function reachable from
// them (their values, accessors, and the prototypes of constructors) whose source, read by the
// fresh frame's own Function.prototype.toString, is not the browser's own: "[native code]"
// under the function's own name (a Proxy of a native function reads "function () { [native
// code] }", nameless). A script run in every frame before the page's (an init script) runs in
// the fresh frame too, so the verdict also lists all of window's own names ("window.<name>"):
// what the reference browser does not have among them is someone else's.
// The page itself adds nothing: this is a module, and the frame is its only addition (index "0").
// Checked at load (<pre id="verdict-load">, POSTed) and again every 600 ms into
// <pre id="verdict"> (a timer longer than 500 ms, which the service's settle does not wait for),
// so a scrape whose last step is a wait reads what the page saw after its actions.
import { publish, show } from "/assets/verdict.js";

const frame = document.createElement("iframe");
frame.src = "about:blank";
frame.style.display = "none";
document.documentElement.append(frame);
const fresh = frame.contentWindow;
const sourceOf = fresh.Function.prototype.toString;
const NATIVE = /\{\s*\[native code\]\s*\}\s*$/;

function extraOwnNames(here, there) {
  const known = new Set(Object.getOwnPropertyNames(there));
  return Object.getOwnPropertyNames(here).filter((name) => !known.has(name) && !/^\d+$/.test(name));
}

function isNative(fn) {
  try {
    const source = sourceOf.call(fn);
    if (!NATIVE.test(source)) return false;
    const name = typeof fn.name === "string" ? fn.name : "";
    return name.startsWith("bound ") || source.replace(/\s+/g, " ") === `function ${name}() { [native code] }`;
  } catch (error) {
    return false;
  }
}

function nonNative() {
  const found = new Set();
  const seen = new Set();
  const visit = (object, path, depth) => {
    if (object === null || (typeof object !== "object" && typeof object !== "function")) return;
    if (seen.has(object)) return;
    seen.add(object);
    for (const name of Object.getOwnPropertyNames(object)) {
      let described;
      try {
        described = Object.getOwnPropertyDescriptor(object, name);
      } catch (error) {
        continue;
      }
      if (!described) continue;
      for (const [role, value] of [["", described.value], [" get", described.get], [" set", described.set]]) {
        if (typeof value !== "function") continue;
        if (!isNative(value)) found.add(path + "." + name + role);
        if (depth > 0 && !seen.has(value)) {
          visit(value, path + "." + name, depth - 1);
          let prototype;
          try {
            prototype = Object.getOwnPropertyDescriptor(value, "prototype");
          } catch (error) {
            prototype = undefined;
          }
          if (prototype && prototype.value) visit(prototype.value, path + "." + name + ".prototype", 0);
        }
      }
      // namespaces such as Math, JSON, console, Reflect, Intl, CSS
      if (depth > 0 && described.value && typeof described.value === "object" && described.value !== window) {
        visit(described.value, path + "." + name, 0);
      }
    }
  };
  visit(window, "window", 1);
  for (const [root, label] of [[navigator, "navigator"], [document, "document"]]) {
    let object = root;
    let level = 0;
    while (object) {
      visit(object, label + (level ? ".__proto__".repeat(level) : ""), 0);
      object = Object.getPrototypeOf(object);
      level += 1;
    }
  }
  return [...found].sort();
}

function verdict(seq) {
  const globals = [
    ...extraOwnNames(window, fresh).map((name) => "window." + name),
    ...extraOwnNames(document, fresh.document).map((name) => "document." + name),
    ...extraOwnNames(navigator, fresh.navigator).map((name) => "navigator." + name),
  ].sort();
  const functions = nonNative();
  const names = Object.getOwnPropertyNames(window).filter((name) => !/^\d+$/.test(name));
  return {
    seq,
    globals,
    nonNative: functions,
    flags: [...new Set([...globals, ...names.map((name) => "window." + name)])]
      .concat(functions.map((path) => "non-native " + path)),
  };
}

let seq = 0;
addEventListener("load", () => {
  const first = verdict(seq);
  show(first, "verdict-load");
  publish("globals", first);
  setInterval(() => {
    seq += 1;
    show(verdict(seq));
  }, 600);
});
