// The verdict of rebrowser's page: each test's rating (-1 passed, 0 not triggered, 0.5 warning,
// 1 failed) from window.detections, which the page keeps. Shown 2 s after load, once its polling
// tests have run many times over and its useragent test has had its answer, then again at every
// change of its table (a test an action triggers later); POSTed once, at 2 s.
import { publish, show } from "/assets/verdict.js";

function verdict() {
  const tests = {};
  const notes = {};
  for (const found of window.detections || []) {
    tests[found.type] = found.rating;
    if (found.rating > 0) {
      const text = document.createElement("div");
      text.innerHTML = found.note;
      notes[found.type] = text.textContent.replace(/\s+/g, " ").trim();
    }
  }
  const flags = Object.keys(tests).filter((type) => tests[type] > 0).sort();
  return { tests, flags, notes };
}

addEventListener("load", () => {
  setTimeout(() => {
    publish("rebrowser", verdict());
    const table = document.querySelector("table#detections-table");
    new MutationObserver(() => show(verdict())).observe(table, { childList: true });
  }, 2000);
});
