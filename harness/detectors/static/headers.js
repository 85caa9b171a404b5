// The headers page: its verdict flags nothing itself; it makes the browser fetch a script and an
// image tagged with the page's run, so the detector server can compare the headers the document
// and these sub-resources came with against the reference's (harness.detectors.verdicts).
import { publish } from "/assets/verdict.js";

const run = encodeURIComponent(new URLSearchParams(location.search).get("run") || "");
const load = (tag, src) =>
  new Promise((resolve) => {
    const element = document.createElement(tag);
    element.onload = element.onerror = resolve;
    element.src = src;
    document.body.append(element);
  });

addEventListener("load", async () => {
  await Promise.all([load("script", "/assets/probe.js?run=" + run), load("img", "/assets/pixel.gif?run=" + run)]);
  await publish("headers", {
    flags: [],
    userAgent: navigator.userAgent,
    languages: navigator.languages,
  });
});
