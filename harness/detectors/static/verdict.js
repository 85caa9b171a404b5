// Publishes a detector's verdict: as JSON in <pre id="verdict"> (what POST /scrape reads back
// with wait_for), and POSTed to the detector server (how the unautomated reference answers).
// An ES module, so the pages gain no global of ours; it never calls document.getElementById or
// getElementsByClassName, which rebrowser's page watches.

const run = new URLSearchParams(location.search).get("run") || "";

export function show(verdict, id = "verdict") {
  let pre = document.querySelector("pre#" + id);
  if (!pre) {
    pre = document.createElement("pre");
    pre.id = id;
    document.body.append(pre);
  }
  pre.textContent = JSON.stringify(verdict);
}

export function publish(name, verdict) {
  show(verdict);
  const body = JSON.stringify({ name, run, verdict, userAgent: navigator.userAgent });
  return fetch("/verdict/" + encodeURIComponent(name) + "?run=" + encodeURIComponent(run), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body,
    keepalive: true,
  }).catch(() => undefined);
}

export function failed(name, error) {
  return publish(name, { error: String(error && error.stack || error), flags: ["error"] });
}
